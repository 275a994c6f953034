package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// adminOver serves the real admin API over a real store with the given
// sinks configured.
func adminOver(t *testing.T, sinks ...string) (string, *store.Store) {
	t.Helper()
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "")
	os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
	st := openStore(t)
	st.SetSinks(sinks)
	return serveAdmin(t, st, "", nil), st
}

func runIn(t *testing.T, f RunFunc, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := f(context.Background(), args, Env{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), code
}

func TestDeliveryCommands(t *testing.T) {
	base, st := adminOver(t, "http", "exec")
	now := time.Now().UTC()
	if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: "b1", Status: "completed", ReceivedAt: now, Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	st.Lease(now)
	if err := st.Finish("b1", store.StateExported, "/x/b1", "", 0, now); err != nil {
		t.Fatal(err)
	}
	d, _, _ := st.NextDelivery("exec", now, nil)
	if err := st.FailDelivery("b1", "exec", d.Generation, "exit", "exit status 3"); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runIn(t, batchesCmd, "show", "b1", "--admin", base)
	if code != 0 || !strings.Contains(out, "SINK") || !regexpLine(out, `exec\s+failed\s+0\s+1\s+0\s+exit status 3`) ||
		!regexpLine(out, `http\s+pending\s+0\s+0\s+0\s+next `) {
		t.Fatalf("batches show = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, deliveriesCmd, "list", "--admin", base)
	if code != 0 || !regexpLine(out, `b1\s+exec\s+failed`) || strings.Contains(out, "http") {
		t.Fatalf("deliveries list (failed by default) = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, batchesCmd, "redeliver", "b1", "--sink", "exec", "--admin", base)
	if code != 0 || !strings.Contains(out, "batch b1 queued for delivery to exec") {
		t.Fatalf("redeliver = %d %s%s", code, out, errOut)
	}
	if got, _, _ := st.ListDeliveries(store.DeliveryFailed, "", 10, ""); len(got) != 0 {
		t.Fatalf("still failed after redeliver: %+v", got)
	}
	_, errOut, code = runIn(t, batchesCmd, "redeliver", "b1", "--sink", "kafka", "--admin", base)
	if code != 1 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "not configured") {
		t.Fatalf("redeliver to an unconfigured sink = %d %s", code, errOut)
	}
	// A missing --sink names the flag and the sinks it can be, not "bad
	// arguments".
	if _, errOut, code = runIn(t, batchesCmd, "redeliver", "b1", "--admin", base); code != 2 ||
		!strings.Contains(errOut, "--sink is required") || !strings.Contains(errOut, "one of http, exec, kafka, nats") ||
		strings.Contains(errOut, "bad arguments") {
		t.Fatalf("redeliver without --sink = %d %s, want 2 naming --sink and its choices", code, errOut)
	}
}

func regexpLine(text, pattern string) bool {
	for _, l := range strings.Split(text, "\n") {
		if regexp.MustCompile(pattern).MatchString(l) {
			return true
		}
	}
	return false
}
