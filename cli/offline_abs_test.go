package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestCompactPrintsAbsolutePaths: run from the directory above a relative
// --data-dir, compact --keep names the data directory and the kept copy by
// absolute paths an operator can paste from anywhere.
func TestCompactPrintsAbsolutePaths(t *testing.T) {
	top := t.TempDir()
	t.Chdir(top)
	st, err := store.Open("data", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATCHHOOK_EXPORT_DIR", "")
	var out, errOut strings.Builder
	if code := compactCmd(context.Background(), []string{"--data-dir", "./data", "--keep"}, Env{Stdout: &out, Stderr: &errOut}); code != 0 {
		t.Fatalf("compact = %d: %s", code, errOut.String())
	}
	abs := filepath.Join(top, "data")
	if !strings.Contains(out.String(), "compacted "+abs+":") || !strings.Contains(out.String(), "kept as "+abs+string(filepath.Separator)) {
		t.Fatalf("compact output does not name %s:\n%s", abs, out.String())
	}
}
