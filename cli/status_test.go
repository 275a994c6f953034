package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// statusAdmin serves the real admin API with a token over a real store; the
// daemon's facts are fixed and readiness is ready's.
func statusAdmin(t *testing.T, token string, ready func() error, facts admin.Facts) string {
	t.Helper()
	return serveAdmin(t, openStore(t), token, func(o *admin.Options) {
		o.Ready, o.Status = ready, func() admin.Facts { return facts }
	})
}

// The exit codes the daemon's answers give (the e2e test covers the
// unreachable daemon and the real binary): a 401 is 1 with the token
// variables named, since a daemon did answer.
func TestStatusExitCodesAndScreen(t *testing.T) {
	facts := admin.Facts{Build: admin.BuildView{Version: "v9", Commit: "0123456789abcdef", Go: "go1.x"}, StartedAt: time.Now().Add(-time.Hour),
		LastAccepted: []admin.ProductTime{{Product: "batch", At: time.Now().Add(-2 * time.Minute)}}, Sinks: []string{"http"}}
	base := statusAdmin(t, "cli-status-admin-token", func() error { return nil }, facts)

	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "wrong")
	out, errOut, code := runIn(t, statusCmd, "--admin", base)
	if code != 1 || !strings.Contains(errOut, "HTTP 401") || !strings.Contains(errOut, "BATCHHOOK_ADMIN_TOKEN") || out != "" {
		t.Fatalf("a refused token = %d %q %q; want 1 naming the token variables", code, out, errOut)
	}
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "cli-status-admin-token")
	out, errOut, code = runIn(t, statusCmd, "--admin", base)
	if code != 0 || !regexpLine(out, `^ready\s+yes$`) || !regexpLine(out, `^build\s+v9, commit 0123456789ab, go1.x$`) ||
		!regexpLine(out, `^last batch webhook\s+\S+ \(2m ago\)$`) || !regexpLine(out, `^http\s+0\s+0\s+-$`) || !strings.Contains(out, "no warnings") {
		t.Fatalf("healthy = %d\n%s%s", code, out, errOut)
	}
	if _, _, code := runIn(t, statusCmd, "--admin", base, "extra"); code != 2 {
		t.Fatalf("an extra argument: exit %d, want 2", code)
	}

	notReady := statusAdmin(t, "cli-status-admin-token", func() error { return errors.New("webhook listener not serving") }, facts)
	out, errOut, code = runIn(t, statusCmd, "--admin", notReady)
	if code != 1 || !regexpLine(out, `^ready\s+NO: webhook listener not serving$`) {
		t.Fatalf("not ready = %d\n%s%s", code, out, errOut)
	}
}

// The screen names which daemon answered (its listeners and data
// directory), counts the webhooks refused with 401 and the unknown paths
// since start with the age of the last, exits 1 on a recent 401 with the
// warning that names the secret, and says when file is the only sink.
func TestStatusScreenNamesTheDaemonAndRefusals(t *testing.T) {
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "cli-status-admin-token")
	now := time.Now()
	facts := admin.Facts{Build: admin.BuildView{Version: "v9", Commit: "c", Go: "go1.x"}, StartedAt: now.Add(-time.Hour),
		LastAccepted: []admin.ProductTime{{Product: "batch"}},
		ListenAddr:   "127.0.0.1:8080", AdminAddr: "127.0.0.1:9090", DataDir: "/var/lib/batchhook",
		NotFoundRequests: 12, LastNotFound: now.Add(-2 * time.Hour),
		Unauthorized: 4, LastUnauthorized: now.Add(-2*time.Minute - 5*time.Second)}
	out, errOut, code := runIn(t, statusCmd, "--admin", statusAdmin(t, "cli-status-admin-token", func() error { return nil }, facts))
	for _, re := range []string{`^webhook listener\s+127\.0\.0\.1:8080$`, `^admin listener\s+127\.0\.0\.1:9090$`, `^data dir\s+/var/lib/batchhook$`,
		`^unknown paths\s+12 requests since start, last 2h ago$`, `^refused \(401\)\s+4 since start, last 2m ago$`,
		`^sinks\s+file only \(exports on disk; no delivery queue\)$`,
		`^  - 4 webhooks refused with 401 \(bad signature\) since start, the last 2m ago: the provider may sign with another secret than BATCHHOOK_SIGNING_SECRET\[_FILE\]; `} {
		if !regexpLine(out, re) {
			t.Errorf("no line matches %s", re)
		}
	}
	if code != 1 || !strings.Contains(out, "1 warning:") || strings.Contains(out, "SINK") {
		t.Errorf("exit %d, want 1 with the 401 warning only (the unknown path is 2h old) and no sink table", code)
	}
	if t.Failed() {
		t.Fatalf("screen:\n%s%s", out, errOut)
	}

	facts.Unauthorized, facts.LastUnauthorized, facts.Sinks = 0, time.Time{}, []string{"http"}
	out, errOut, code = runIn(t, statusCmd, "--admin", statusAdmin(t, "cli-status-admin-token", func() error { return nil }, facts))
	if code != 0 || !regexpLine(out, `^refused \(401\)\s+0 since start$`) || regexpLine(out, `^sinks\s`) || !regexpLine(out, `^http\s+0\s+0\s+-$`) {
		t.Fatalf("no 401, an http sink: exit %d, want 0 with no sinks line and the table\n%s%s", code, out, errOut)
	}
}
