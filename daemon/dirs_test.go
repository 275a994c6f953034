package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestStartBlamesTheDataDirForItsDefaultExportDir: an export directory
// that cannot be created below BATCHHOOK_DATA_DIR (here a file is in its
// way, which holds for root too) stops the start naming DATA_DIR, the
// variable the operator set, with the path and the fix.
func TestStartBlamesTheDataDirForItsDefaultExportDir(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "exports"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := New(cfg, zerolog.Nop())
	err := d.Start(ln)
	if err == nil {
		d.Stop(context.Background())
		t.Fatal("Start succeeded with a file where the exports go")
	}
	msg := err.Error()
	if !errors.Is(err, ErrDirConfig) || !strings.Contains(msg, "BATCHHOOK_DATA_DIR ("+dir+")") ||
		strings.Contains(msg, "EXPORT_DIR") || !strings.Contains(msg, filepath.Join(dir, "exports")) ||
		!strings.Contains(msg, "a file is in the way") {
		t.Fatalf("Start = %v; want ErrDirConfig naming BATCHHOOK_DATA_DIR, the exports path and the fix", err)
	}
}
