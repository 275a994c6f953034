package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestBatchesShowPrefixAndFetchCounters: `batches show` finds a batch by a
// unique prefix (ambiguous ones are refused naming the count), shows the
// refetches, and does not print "fetch attempts: 0" for a fetched batch;
// a batch whose fetch failed shows its failed attempts under that name.
func TestBatchesShowPrefixAndFetchCounters(t *testing.T) {
	base, st := adminOver(t)
	now := time.Now().UTC()
	for _, id := range []string{"b1-alpha", "b1-beta", "c9"} {
		if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: now, Raw: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		b, _, err := st.Lease(now)
		if err != nil || b == nil {
			t.Fatalf("lease: %v %v", b, err)
		}
		switch b.ID {
		case "c9":
			if err := st.Finish(b.ID, store.StateExported, "/x/c9", "", 0, now); err != nil {
				t.Fatal(err)
			}
		default:
			if err := st.Retry(b.ID, now.Add(time.Hour), "transient", "HTTP 503", true, now); err != nil {
				t.Fatal(err)
			}
		}
	}

	out, errOut, code := runIn(t, batchesCmd, "show", "c", "--admin", base)
	if code != 0 || !regexpLine(out, `^batch:\s+c9$`) || !regexpLine(out, `^refetches:\s+0 `) || strings.Contains(out, "fetch attempts") {
		t.Fatalf("batches show c = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, batchesCmd, "show", "b1-a", "--admin", base)
	if code != 0 || !regexpLine(out, `^batch:\s+b1-alpha$`) || !regexpLine(out, `^failed fetch attempts:\s+1 `) {
		t.Fatalf("batches show b1-a = %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runIn(t, batchesCmd, "show", "b1", "--admin", base)
	if code != 1 || !strings.Contains(errOut, `2 batches start with "b1"`) {
		t.Fatalf("batches show b1 (ambiguous) = %d %s", code, errOut)
	}
	if _, errOut, code = runIn(t, batchesCmd, "show", "zz", "--admin", base); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("batches show zz = %d %s", code, errOut)
	}
}
