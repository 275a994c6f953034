package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lineWithPrefix returns the first line that starts with prefix, or "".
func lineWithPrefix(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// runDemoBinary runs the real binary's demo and returns its stdout lines.
func runDemoBinary(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"demo"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	dir, ok := strings.CutPrefix(lineWithPrefix(lines, "demo dir: "), "demo dir: ")
	if !ok || !filepath.IsAbs(dir) {
		t.Fatalf("no demo dir line:\n%s", stdout.String())
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return lines
}

// TestDemoRemovesItsDirectory: with --keep=false the demo leaves nothing
// behind (its directory holds a database, sample CPFs and secrets), says
// so on its last line, and points at what to try next.
func TestDemoRemovesItsDirectory(t *testing.T) {
	t.Parallel()
	lines := runDemoBinary(t, "-cpfs", "5", "--keep=false")
	dir := strings.TrimPrefix(lineWithPrefix(lines, "demo dir: "), "demo dir: ")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("demo dir %s still there after the demo (stat: %v)", dir, err)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "removed: "+dir+" ") {
		t.Errorf("last line %q, want removed: %s …", last, dir)
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{`README "The provider simulator, and batchhook by hand"`, "without --keep=false"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not say %q:\n%s", want, out)
		}
	}
}

// TestDemoKeepPrintsAServeCommandThatWorks: with --keep the directory
// stays, the last line is still "export: <path>", and the printed
// "batchhook serve" command, run as printed (on free ports instead of the
// fixed ones), serves the kept database: the CLI then lists the batch.
func TestDemoKeepPrintsAServeCommandThatWorks(t *testing.T) {
	t.Parallel()
	lines := runDemoBinary(t, "-cpfs", "5", "--keep")
	path, ok := strings.CutPrefix(lines[len(lines)-1], "export: ")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("last line %q, want export: <absolute path>", lines[len(lines)-1])
	}
	if _, err := os.Stat(filepath.Join(path, "manifest.json")); err != nil {
		t.Fatalf("kept export: %v", err)
	}
	id := filepath.Base(path)
	var serve string
	for _, l := range lines {
		if strings.HasSuffix(l, " batchhook serve") {
			serve = strings.TrimSpace(strings.TrimSuffix(l, " batchhook serve"))
		}
	}
	if serve == "" {
		t.Fatalf("no serve command printed:\n%s", strings.Join(lines, "\n"))
	}
	env := map[string]string{}
	for _, w := range strings.Fields(serve) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || !strings.HasPrefix(k, "BATCHHOOK_") {
			t.Fatalf("serve command word %q is not a BATCHHOOK_ assignment", w)
		}
		if k != "BATCHHOOK_LISTEN_ADDR" && k != "BATCHHOOK_ADMIN_ADDR" {
			env[k] = v
		}
	}
	env["BATCHHOOK_LOG_FORMAT"] = "json" // startDaemon reads the JSON start line
	d := startDaemon(t, freePort(t), env)
	token, err := os.ReadFile(env["BATCHHOOK_ADMIN_TOKEN_FILE"])
	if err != nil || len(token) == 0 {
		t.Fatalf("the printed serve command's admin token file: %v", err)
	}
	if _, _, code := runCLI(t, d, 30*time.Second, "batches", "show", id); code == 0 {
		t.Errorf("the kept daemon answered the CLI without its admin token")
	}
	out, stderr, code := runCLIWith(t, d, string(token), 30*time.Second, "batches", "show", id)
	if code != 0 || !strings.Contains(out, "exported") {
		t.Fatalf("batches show %s on the kept directory: exit %d\n%s\n%s", id, code, out, stderr)
	}
	for _, want := range []string{"batchhook batches show " + id, "export BATCHHOOK_ADMIN_TOKEN_FILE=", "/ui/"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("the next steps do not say %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	d.stop(t)
}
