package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

func TestSinkMetrics(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetSinks([]string{"http", "exec"})
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	now := t0.Add(90 * time.Second)
	m := New(st, func() time.Time { return now })
	m.InitSinks([]string{"http", "exec"})
	// Before any delivery: every series of every configured sink at 0.
	text := scrape(t, m)
	for _, want := range []string{
		`batchhook_sink_deliveries_total{outcome="failed",sink="exec"} 0`,
		`batchhook_sink_deliveries_total{outcome="delivered",sink="http"} 0`,
		`batchhook_sink_pending{sink="http"} 0`,
		`batchhook_sink_oldest_pending_seconds{sink="exec"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	for i, id := range []string{"b1", "b2"} {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: at, Raw: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		if b, _, err := st.Lease(at); err != nil || b == nil {
			t.Fatalf("lease: %v", err)
		}
		if err := st.Finish(id, store.StateExported, "/x/"+id, "", 0, at); err != nil {
			t.Fatal(err)
		}
	}
	d, _, _ := st.NextDelivery("exec", now, nil)
	if _, err := st.Delivered(d.BatchID, "exec", d.Generation, now, false); err != nil {
		t.Fatal(err)
	}
	m.SinkOutcome("exec", "delivered")
	m.SinkOutcome("http", "retry")
	m.SinkOutcome("http", "retry")
	text = scrape(t, m)
	for _, want := range []string{
		`batchhook_sink_deliveries_total{outcome="delivered",sink="exec"} 1`,
		`batchhook_sink_deliveries_total{outcome="retry",sink="http"} 2`,
		`batchhook_sink_pending{sink="http"} 2`,
		`batchhook_sink_pending{sink="exec"} 1`,
		`batchhook_sink_oldest_pending_seconds{sink="http"} 90`,
		`batchhook_sink_oldest_pending_seconds{sink="exec"} 60`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
