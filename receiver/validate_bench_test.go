package receiver

import "testing"

// benchNotification is a notification as the provider sends it.
var benchNotification = []byte(`{"event":"batch.completed","batch_id":"01HF8Z6Q3V4X5Y6Z7A8B9C0D1E","status":"completed",` +
	`"total_requested":1000,"total_found":987,"total_not_found":13,"completed_at":"2026-11-22T10:00:00Z"}`)

// BenchmarkParse compares the scanner with the decoder it replaced (the
// oracle), in one invocation so the shared machine's load hits both.
func BenchmarkParse(b *testing.B) {
	for _, impl := range []struct {
		name  string
		parse func([]byte) error
	}{
		{"oracle", func(body []byte) error { _, err := oracleParse(body); return err }},
		{"scanner", func(body []byte) error { _, err := Parse(body); return err }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchNotification)))
			for b.Loop() {
				if err := impl.parse(benchNotification); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
