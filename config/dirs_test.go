package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestExportDirProblemNamesTheVariableSet: when the export directory is
// the default below BATCHHOOK_DATA_DIR, a problem with it is reported
// against BATCHHOOK_DATA_DIR, the variable the operator set, with the path
// and the fix; an EXPORT_DIR of its own is reported against itself.
func TestExportDirProblemNamesTheVariableSet(t *testing.T) {
	t.Run("file in the way of the default", func(t *testing.T) {
		requiredEnv(t)
		data := t.TempDir()
		if err := os.WriteFile(filepath.Join(data, "exports"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("BATCHHOOK_DATA_DIR", data)
		_, err := config.Load(config.TestSinks)
		wantDirError(t, err, "BATCHHOOK_DATA_DIR", "BATCHHOOK_EXPORT_DIR", filepath.Join(data, "exports"), "a file is in the way")
	})
	t.Run("own export dir", func(t *testing.T) {
		requiredEnv(t)
		file := filepath.Join(t.TempDir(), "exports")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("BATCHHOOK_DATA_DIR", t.TempDir())
		t.Setenv("BATCHHOOK_EXPORT_DIR", file)
		_, err := config.Load(config.TestSinks)
		wantDirError(t, err, "BATCHHOOK_EXPORT_DIR", "BATCHHOOK_DATA_DIR", file, "a file is in the way")
	})
	t.Run("unreadable data dir", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads a mode 000 directory; the file-in-the-way case covers the naming")
		}
		requiredEnv(t)
		data := t.TempDir()
		if err := os.Chmod(data, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(data, 0o700) })
		t.Setenv("BATCHHOOK_DATA_DIR", data)
		_, err := config.Load(config.TestSinks)
		wantDirError(t, err, "BATCHHOOK_DATA_DIR", "BATCHHOOK_EXPORT_DIR", data, "must own it")
	})
}

func wantDirError(t *testing.T, err error, name, notName, path, fix string) {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, name+": ") || namesVar(msg, notName) || !strings.Contains(msg, path) || !strings.Contains(msg, fix) {
		t.Fatalf("error %q: want it to start with %s, not name %s, show %s and say %q", msg, name, notName, path, fix)
	}
}
