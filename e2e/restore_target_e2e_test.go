package e2e

// Where `batchhook restore` writes: a target without a database is refused
// unless --create asks for one, so an operator who forgot the data
// directory (BATCHHOOK_DATA_DIR lives in the systemd unit, not in their
// shell) is told so instead of restoring into ./data of wherever they stand.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// runFrom runs the binary in the working directory wd ("" = the test's)
// with exactly the variables in env (no BATCHHOOK_DATA_DIR unless given),
// and returns its stdout, stderr and exit status.
func runFrom(t *testing.T, wd string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir, cmd.Env = wd, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// newDatabase makes a batchhook database in dir (a backup file is one) and
// returns its path and summary.
func newDatabase(t *testing.T, dir string) (string, store.Summary) {
	t.Helper()
	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := st.Summary()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, store.FileName), sum
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestRestoreRefusesATargetWithoutADatabase(t *testing.T) {
	t.Parallel()
	backup, want := newDatabase(t, t.TempDir())
	wd := t.TempDir()
	path := []string{"PATH=" + os.Getenv("PATH")}

	// The systemd recipe word for word: BATCHHOOK_DATA_DIR unset in the
	// operator's shell. Refused, naming ./data as an absolute path, and
	// nothing is created there.
	out, stderr, code := runFrom(t, wd, path, "restore", backup)
	defDir := filepath.Join(wd, "data")
	if code != 2 || !strings.Contains(firstLine(stderr), defDir) || !strings.Contains(stderr, "--data-dir") ||
		!strings.Contains(stderr, "--create") {
		t.Fatalf("restore with BATCHHOOK_DATA_DIR unset: exit %d, stdout %q, stderr %q; want exit 2 naming %s, --data-dir and --create",
			code, out, stderr, defDir)
	}
	if _, err := os.Lstat(defDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore left %s: %v", defDir, err)
	}

	// An existing directory without a database (a wrong --data-dir, or
	// the variable pointing elsewhere): refused, and it stays empty.
	empty := t.TempDir()
	for _, args := range [][]string{{"restore", backup, "--data-dir", empty}, {"restore", backup}} {
		env := path
		if len(args) == 2 {
			env = append(slices.Clone(path), "BATCHHOOK_DATA_DIR="+empty)
		}
		out, stderr, code := runFrom(t, wd, env, args...)
		if code != 2 || !strings.Contains(firstLine(stderr), empty) {
			t.Fatalf("%v into a directory without a database: exit %d, stdout %q, stderr %q; want exit 2 naming %s",
				args, code, out, stderr, empty)
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Fatalf("a refused restore wrote into %s: %v", empty, entries)
		}
	}

	// --create allows a new data directory, made 0700; the first line of
	// the output names it.
	fresh := filepath.Join(t.TempDir(), "new", "data")
	out, stderr, code = runFrom(t, wd, path, "restore", "--create", "--data-dir", fresh, backup)
	if code != 0 || !strings.Contains(firstLine(out), fresh) {
		t.Fatalf("restore --create: exit %d, first line %q; want exit 0 and the target %s first\n%s%s",
			code, firstLine(out), fresh, out, stderr)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the created data directory: %v %v, want mode 0700", st, err)
	}
	if got, err := store.Check(filepath.Join(fresh, store.FileName)); err != nil || !slices.Equal(got.Buckets, want.Buckets) {
		t.Fatalf("the database restored with --create: %v %v, want the backup's %v", got.Buckets, err, want.Buckets)
	}

	// A target with a database needs no --create; the first line names it.
	out, stderr, code = runFrom(t, wd, path, "restore", backup, "--data-dir", fresh)
	if code != 0 || !strings.Contains(firstLine(out), fresh) || !strings.Contains(out, "previous database kept as ") {
		t.Fatalf("restore over a database: exit %d; want exit 0, the target first and the previous one kept\n%s%s", code, out, stderr)
	}
}
