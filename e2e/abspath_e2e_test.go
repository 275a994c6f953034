package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
)

// Every path a log line names is absolute, even when
// the variables are relative to the daemon's working directory: the
// started line's data_dir and export_dir, a warning's path.
func TestLoggedPathsAreAbsolute(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "secret"), []byte("s\n"), 0o644); err != nil { // readable: a warning with its path
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve")
	cmd.Dir = wd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BATCHHOOK_SIGNING_SECRET_FILE=secret", "BATCHHOOK_API_KEY=k",
		"BATCHHOOK_API_BASE_URL=http://127.0.0.1:1", "BATCHHOOK_DATA_DIR=./data",
		"BATCHHOOK_LISTEN_ADDR=127.0.0.1:0", "BATCHHOOK_ADMIN_ADDR=127.0.0.1:0"}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(out.String(), `"event":"started"`) {
		if time.Now().After(deadline) {
			t.Fatalf("did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	checked := 0
	for _, l := range strings.Split(out.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		for _, k := range []string{"path", "data_dir", "export_dir"} {
			if v, ok := m[k].(string); ok {
				if !filepath.IsAbs(v) {
					t.Errorf("%s %q is not absolute in %s", k, v, l)
				}
				checked++
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d paths in the log:\n%s", checked, out.String())
	}
}
