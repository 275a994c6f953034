package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
)

// TestAFailedStartIsReportedAtTheNextStart: a start that fails once the
// database is open (here: the admin port is taken) is a run that did not
// stop cleanly; the next start logs previous_run_failed naming it, and
// after a clean stop the start after that logs nothing.
func TestAFailedStartIsReportedAtTheNextStart(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	bad := cfg
	bad.AdminAddr = taken.Addr().String()
	if err := New(bad, zerolog.Nop()).Start(ln); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_ADMIN_ADDR") {
		t.Fatalf("start with the admin port taken: %v, want a listen error", err)
	}

	for i, want := range []string{"start failed: listen on " + taken.Addr().String(), ""} {
		var out testutil.SyncBuffer
		d := New(cfg, zerolog.New(&out))
		if err := d.Start(listen(t)); err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, l := range bytes.Split([]byte(out.String()), []byte("\n")) {
			var m map[string]string
			if json.Unmarshal(l, &m) == nil && m["event"] == "previous_run_failed" {
				reasons = append(reasons, m["reason"])
			}
		}
		if want == "" && len(reasons) != 0 || want != "" && (len(reasons) != 1 || !strings.HasPrefix(reasons[0], want)) {
			t.Fatalf("start %d: previous_run_failed reasons %q, want %q", i+2, reasons, want)
		}
		if d.previousFailed != (want != "") {
			t.Fatalf("start %d: previousFailed = %v", i+2, d.previousFailed)
		}
		if err := d.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
