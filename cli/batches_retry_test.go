package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// `batches retry ID` makes a queued batch waiting out a backoff due now
// and says so; a batch in another state exits 1 with the daemon's reason.
func TestBatchesRetry(t *testing.T) {
	st := openStore(t)
	base := serveAdmin(t, st, "", nil)
	now := time.Now().UTC()
	for _, id := range []string{"b_wait", "b_done"} {
		if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: now, Raw: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		if b, _, _ := st.Lease(now); b == nil || b.ID != id {
			t.Fatalf("leased %v, want %s", b, id)
		}
	}
	if err := st.Retry("b_wait", now.Add(time.Hour), "transient", "503", true, now); err != nil {
		t.Fatal(err)
	}
	if err := st.Finish("b_done", store.StateExported, "/x/b_done", "", 0, now); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runIn(t, batchesCmd, "retry", "b_wait", "--admin", base)
	if code != 0 || out != "batch b_wait due for a fetch now (1 failed attempt so far)\n" {
		t.Fatalf("batches retry b_wait = %d\n%s%s", code, out, errOut)
	}
	if b, _ := st.Get("b_wait"); !b.NextAttemptAt.Before(now.Add(time.Hour)) {
		t.Fatalf("b_wait is still due at %v", b.NextAttemptAt)
	}
	_, errOut, code = runIn(t, batchesCmd, "retry", "b_done", "--admin", base)
	if code != 1 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "use refetch") {
		t.Fatalf("batches retry of an exported batch = %d %s, want 1 with the reason", code, errOut)
	}
	if _, errOut, code = runIn(t, batchesCmd, "retry", "--admin", base); code != 2 || !strings.Contains(errOut, "batchhook batches retry ID") {
		t.Fatalf("batches retry without an id = %d %s, want 2 with the usage", code, errOut)
	}
}
