package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestQuarantineShowSuggestsTrackOnlyWithABatchID: an entry whose body
// gave no safe batch_id (shown as "-") must not suggest
// "batchhook track BATCH_ID", which an operator would paste as is.
func TestQuarantineShowSuggestsTrackOnlyWithABatchID(t *testing.T) {
	base, st := adminOver(t)
	now := time.Now().UTC()
	for _, q := range []store.Quarantined{
		{ID: "aaaa01", Reason: "status must be one of completed, partial, expired, failed", Attempt: 1, ReceivedAt: now,
			Raw: []byte(`{"event":"batch.completed","batch_id":"b_q1","status":"nope"}`), BatchID: "b_q1"},
		{ID: "bbbb02", Reason: "batch_id is unsafe", Attempt: 2, ReceivedAt: now,
			Raw: []byte(`{"event":"batch.completed","batch_id":"../etc","status":"completed"}`)},
	} {
		if err := st.Quarantine(q); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := runIn(t, quarantineCmd, "show", "aaaa01", "--admin", base)
	if code != 0 || !regexpLine(out, `^batch id:\s+b_q1$`) || !strings.Contains(out, "`batchhook track b_q1`") {
		t.Fatalf("show of an entry with a batch id = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, quarantineCmd, "show", "bbbb02", "--admin", base)
	if code != 0 || !regexpLine(out, `^batch id:\s+-$`) || !strings.Contains(out, "no batch to track") {
		t.Fatalf("show of an entry without a batch id = %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "batchhook track") || strings.Contains(out, "BATCH_ID") {
		t.Fatalf("show of an entry without a batch id suggests a track:\n%s", out)
	}
}
