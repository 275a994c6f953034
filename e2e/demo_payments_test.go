package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoPayments: `demo --payments --keep` end to end with the real binary.
func TestDemoPayments(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "demo", "--payments", "-cpfs", "20", "--keep")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo --payments: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "export: ") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	t.Cleanup(func() {
		os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(strings.TrimPrefix(lines[len(lines)-1], "export: ")))))
	})
	re := regexp.MustCompile(`^payments: /\S+/payments/\d{4}-\d{2}-\d{2}\.ndjson.* \(3 events: deposit paid, withdrawal paid, withdrawal failed; each once, bytes as signed\)$`)
	if payments := lineWithPrefix(lines, "payments: "); !re.MatchString(payments) {
		t.Fatalf("payments line %q, want %s", payments, re)
	}
	checkDemoPaymentsServe(t, lines)
}

// checkDemoPaymentsServe: the kept directory holds the payments secret as
// a 0600 file, and the printed serve command names it, so the daemon run
// as printed still has payments on and shows the demo's events.
func checkDemoPaymentsServe(t *testing.T, lines []string) {
	t.Helper()
	var serve string
	for _, l := range lines {
		if strings.HasSuffix(l, " batchhook serve") {
			serve = strings.TrimSpace(strings.TrimSuffix(l, " batchhook serve"))
		}
	}
	env := map[string]string{}
	for _, w := range strings.Fields(serve) {
		if k, v, ok := strings.Cut(w, "="); ok && k != "BATCHHOOK_LISTEN_ADDR" && k != "BATCHHOOK_ADMIN_ADDR" {
			env[k] = v
		}
	}
	file := env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"]
	if file == "" {
		t.Fatalf("the serve command %q does not name the payments secret", serve)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
		t.Fatalf("payments secret file %s: %v %v, want a non-empty 0600 file", file, st, err)
	}
	env["BATCHHOOK_LOG_FORMAT"] = "json" // startDaemon reads the JSON start line
	d := startDaemon(t, freePort(t), env)
	defer d.stop(t)
	token, err := os.ReadFile(env["BATCHHOOK_ADMIN_TOKEN_FILE"])
	if err != nil {
		t.Fatalf("the serve command's admin token file: %v", err)
	}
	out, stderr, code := runCLIWith(t, d, string(token), 30*time.Second, "payments", "list")
	if code != 0 || strings.Contains(out, "payments are off") || strings.Count(out, "transaction.") < 3 {
		t.Fatalf("payments list on the kept directory: exit %d\n%s\n%s", code, out, stderr)
	}
}
