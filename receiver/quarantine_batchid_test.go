package receiver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// A quarantined body whose batch_id can be read safely carries it in the
// log line and the entry (so the operator can track the batch); an unsafe
// or unreadable one does not.
func TestQuarantineKeepsASafeBatchID(t *testing.T) {
	e := start(t, nil)
	for _, tt := range []struct {
		body string
		want string
	}{
		{`{"event":"batch.completed","batch_id":"b_q1","status":"nope"}`, "b_q1"},
		{`{"event":"batch.completed","batch_id":"../etc","status":"completed"}`, ""},
		{`{"event":"batch.completed","batch_id":7,"status":"completed"}`, ""},
		{`{"event":"batch.completed","BATCH_ID":"b_case","status":"nope"}`, ""},
		{`not json "batch_id":"b_x"`, ""},
	} {
		b := []byte(tt.body)
		if r := e.post(t, testPath, b, signed(b)); r.code != 400 {
			t.Fatalf("%s: %d, want 400", tt.body, r.code)
		}
		sum := sha256.Sum256(b)
		id := hex.EncodeToString(sum[:])
		q, err := e.store.GetQuarantined(id)
		if err != nil {
			t.Fatal(err)
		}
		if q.BatchID != tt.want {
			t.Fatalf("%s: entry batch_id %q, want %q", tt.body, q.BatchID, tt.want)
		}
		var line string
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, id) {
				line = l
			}
		}
		if has := strings.Contains(line, `"batch_id":`); has != (tt.want != "") ||
			(tt.want != "" && !strings.Contains(line, `"batch_id":"`+tt.want+`"`)) {
			t.Fatalf("%s: log line %s, want batch_id %q", tt.body, line, tt.want)
		}
	}
}
