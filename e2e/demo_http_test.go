package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/export"
)

// TestDemoHTTPSink: `demo --sink http --keep` delivers to its verifying
// receiver and says so before the last line, which stays "export: <path>".
func TestDemoHTTPSink(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "demo", "-cpfs", "250", "--sink", "http", "--keep")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo --sink http: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	path, ok := strings.CutPrefix(lines[len(lines)-1], "export: ")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("last stdout line %q, want export: <absolute path>", lines[len(lines)-1])
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(path)))) })
	// 250 items in parts of demoPartItems (100): 3 parts.
	re := regexp.MustCompile(`^delivered: http://127\.0\.0\.1:\d+/\S+ \(3 parts, 250 items, signatures verified\)$`)
	if delivered := lineWithPrefix(lines, "delivered: "); !re.MatchString(delivered) {
		t.Fatalf("delivered line %q, want %s", delivered, re)
	}
	if ok, err := export.Verify(path); !ok || err != nil {
		t.Fatalf("demo export %s does not verify: %v", path, err)
	}
	if !strings.Contains(stderr.String(), "sink_delivered") {
		t.Fatalf("stderr has no sink_delivered event:\n%s", stderr.String())
	}

	out, err := exec.Command(binary, "demo", "--sink", "kafka").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--sink must be file or http") {
		t.Fatalf("demo --sink kafka: %v %s", err, out)
	}
}
