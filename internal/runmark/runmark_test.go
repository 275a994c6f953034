package runmark

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	t0 = time.Date(2026, 11, 24, 10, 0, 0, 123_000_000, time.UTC)
	t1 = t0.Add(time.Hour)
)

func content(t *testing.T, m *Marker) string {
	t.Helper()
	raw, err := os.ReadFile(m.Path())
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestEachEndIsReadBackAtTheNextStart walks the states a data directory
// sees: a first start, a clean stop, a kill (no end recorded), a failure.
func TestEachEndIsReadBackAtTheNextStart(t *testing.T) {
	dir := t.TempDir()
	m := New(dir)
	if prev, found, err := m.Begin(t0); err != nil || found {
		t.Fatalf("first start: %+v %v %v, want nothing found", prev, found, err)
	}
	if got := content(t, m); got != "running since 2026-11-24T10:00:00.123Z\n" {
		t.Fatalf("marker after Begin: %q", got)
	}
	if st, err := os.Stat(m.Path()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("marker mode: %v %v, want 0600", st, err)
	}

	if err := m.Stopped(t1); err != nil {
		t.Fatal(err)
	}
	prev, found, err := m.Begin(t1.Add(time.Minute))
	if err != nil || !found || prev.Failed || !prev.When.Equal(t1) {
		t.Fatalf("after a clean stop: %+v %v %v, want not failed, when %s", prev, found, err, t1)
	}

	// No end recorded (SIGKILL): an unclean exit, when that run started.
	prev, found, err = New(dir).Begin(t1.Add(2 * time.Minute))
	if err != nil || !found || !prev.Failed || prev.Reason != UncleanExit || !prev.When.Equal(t1.Add(time.Minute)) {
		t.Fatalf("after a kill: %+v %v %v, want %q when the killed run started", prev, found, err, UncleanExit)
	}

	reason := "failed commit: store failed:\n write batchhook.db: no space left on device " + strings.Repeat("x", 600)
	if err := m.Failed(t1.Add(3*time.Minute), reason); err != nil {
		t.Fatal(err)
	}
	prev, _, err = m.Begin(t1.Add(4 * time.Minute))
	if err != nil || !prev.Failed || !prev.When.Equal(t1.Add(3*time.Minute)) ||
		!strings.HasPrefix(prev.Reason, "failed commit: store failed: write batchhook.db: no space left on device x") ||
		len(prev.Reason) > maxReason+len("…") || strings.Contains(prev.Reason, "\n") {
		t.Fatalf("after a failure: %+v %v, want the reason on one line, capped", prev, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*")); len(left) != 0 {
		t.Fatalf("temporary markers left: %v", left)
	}
}

// TestUnreadableMarkerCountsAsFailed: anything but a marker line (a file
// someone edited, a directory in its place) is reported, not ignored, and
// a marker half-written by a crash is removed.
func TestUnreadableMarkerCountsAsFailed(t *testing.T) {
	for name, plant := range map[string]func(string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte("hello\n"), 0o600) },
		"no time": func(p string) error { return os.WriteFile(p, []byte("running since yesterday\n"), 0o600) },
		"link":    func(p string) error { return os.Symlink("/etc/hostname", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m := New(dir)
			if err := plant(m.Path()); err != nil {
				t.Fatal(err)
			}
			left := filepath.Join(dir, tempPrefix+"123")
			if err := os.WriteFile(left, []byte("runn"), 0o600); err != nil {
				t.Fatal(err)
			}
			prev, found, err := m.Begin(t0)
			if err != nil || !found || !prev.Failed || !strings.Contains(prev.Reason, "unreadable") {
				t.Fatalf("%+v %v %v, want failed, unreadable", prev, found, err)
			}
			if _, err := os.Lstat(left); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the half-written marker is still there: %v", err)
			}
			if st, err := os.Lstat(m.Path()); err != nil || !st.Mode().IsRegular() {
				t.Fatalf("the marker was not replaced by a regular file: %v %v", st, err)
			}
		})
	}
}

// TestBeginOnAFullDisk: when the running line cannot be written, a clean
// previous end must not stay to vouch for this run (it is removed); an
// unclean one stays, still true of the last run that recorded anything.
func TestBeginOnAFullDisk(t *testing.T) {
	full := func(string, string) (*os.File, error) { return nil, syscall.ENOSPC }
	for _, clean := range []bool{true, false} {
		dir := t.TempDir()
		m := New(dir)
		if _, _, err := m.Begin(t0); err != nil {
			t.Fatal(err)
		}
		if clean {
			if err := m.Stopped(t1); err != nil {
				t.Fatal(err)
			}
		}
		createTemp = full
		prev, found, err := m.Begin(t1.Add(time.Minute))
		failErr := m.Failed(t1.Add(2*time.Minute), "failed commit: no space")
		createTemp = os.CreateTemp
		if !errors.Is(err, syscall.ENOSPC) || !errors.Is(failErr, syscall.ENOSPC) || !found || prev.Failed == clean {
			t.Fatalf("clean=%v: Begin %+v %v %v, Failed %v; want both to fail with ENOSPC", clean, prev, found, err, failErr)
		}
		_, err = os.Stat(m.Path())
		if clean != errors.Is(err, os.ErrNotExist) {
			t.Fatalf("clean=%v: marker after a Begin that could not write: %v", clean, err)
		}
		prev, found, err = m.Begin(t1.Add(3 * time.Minute))
		if err != nil || found == clean || (!clean && (prev.Reason != UncleanExit || !prev.When.Equal(t0))) {
			t.Fatalf("clean=%v: the start after: %+v %v %v", clean, prev, found, err)
		}
	}
}
