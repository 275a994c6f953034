package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/batchhook/batchhook/store"
)

// TestExportDirProblemsAtStartExit2: whatever is wrong below the export
// directory at start (a link or a file where .partial or payments/
// belongs, a root that cannot be written) is the operator's to fix in the
// configuration, as the configuration page says: exit 2, one line naming
// the variable and the path. So is a database file that is a link.
func TestExportDirProblemsAtStartExit2(t *testing.T) {
	t.Parallel()
	link := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Symlink(t.TempDir(), path); err != nil {
			t.Fatal(err)
		}
	}
	file := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// plant makes the shape inside the export directory (or, for the
		// database, the data directory).
		plant    func(t *testing.T, data, exports string)
		payments bool
		want     []string
	}{
		{name: "partial link", plant: func(t *testing.T, _, e string) { link(t, filepath.Join(e, ".partial")) },
			want: []string{"BATCHHOOK_DATA_DIR", ".partial", "symbolic link"}},
		{name: "payments link", payments: true, plant: func(t *testing.T, _, e string) { link(t, filepath.Join(e, "payments")) },
			want: []string{"BATCHHOOK_DATA_DIR", "payments", "symbolic link"}},
		{name: "partial file", plant: func(t *testing.T, _, e string) { file(t, filepath.Join(e, ".partial")) },
			want: []string{"BATCHHOOK_DATA_DIR", ".partial", "not a directory"}},
		{name: "payments file", payments: true, plant: func(t *testing.T, _, e string) { file(t, filepath.Join(e, "payments")) },
			want: []string{"BATCHHOOK_DATA_DIR", "payments", "not a directory"}},
		{name: "database link", plant: func(t *testing.T, d, _ string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere.db"), filepath.Join(d, store.FileName)); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"BATCHHOOK_DATA_DIR", store.FileName, "symbolic link"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			exports := filepath.Join(data, "exports")
			if err := os.Mkdir(exports, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, data, exports)
			env := map[string]string{"BATCHHOOK_DATA_DIR": data}
			if tc.payments {
				env["BATCHHOOK_PAYMENTS_SIGNING_SECRET"] = "payments secret"
			}
			code, stderr, _ := runServe(t, []string{binary, "serve"}, env)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %s", code, stderr)
			}
			stderrLine(t, stderr, tc.want...)
		})
	}
}
