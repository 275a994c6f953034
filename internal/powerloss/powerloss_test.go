package powerloss

// The model, checked through the kernel: every test works on the mount
// with ordinary system calls, cuts, and looks at what came back.

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// writeFile creates (or truncates) path with data; with sync it fsyncs
// the file.
func writeFile(t *testing.T, path, data string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// syncDir fsyncs the directory dir.
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dir, err)
	}
}

// durableFile writes path, synced, with its directory synced.
func durableFile(t *testing.T, path, data string) {
	t.Helper()
	writeFile(t, path, data, true)
	syncDir(t, filepath.Dir(path))
}

func cut(t *testing.T, fs *FS) {
	t.Helper()
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
}

// content is the file's content, or "<missing>".
func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func want(t *testing.T, path, expected string) {
	t.Helper()
	if got := content(t, path); got != expected {
		t.Errorf("%s: %q, want %q", filepath.Base(path), got, expected)
	}
}

func TestWritesWithoutFsyncAreLostWithFsyncKept(t *testing.T) {
	fs := MountTest(t, Options{})
	kept, lost, grown := filepath.Join(fs.Dir(), "kept"), filepath.Join(fs.Dir(), "lost"), filepath.Join(fs.Dir(), "grown")
	durableFile(t, kept, "synced")
	durableFile(t, lost, "first")
	durableFile(t, grown, "base")
	writeFile(t, lost, "second, never synced", false)
	f, err := os.OpenFile(grown, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" and more"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want(t, lost, "second, never synced") // the running system sees its writes
	want(t, grown, "base and more")
	cut(t, fs)
	want(t, kept, "synced")
	want(t, lost, "first")
	want(t, grown, "base")
}

func TestFdatasyncKeepsDataAndSize(t *testing.T) {
	fs := MountTest(t, Options{})
	path := filepath.Join(fs.Dir(), "f")
	durableFile(t, path, "0123456789")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("AB"), 12); err != nil { // a hole at 10-11
		t.Fatal(err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4); err != nil { // not synced: the cut undoes it
		t.Fatal(err)
	}
	f.Close()
	cut(t, fs)
	want(t, path, "0123456789\x00\x00AB")
}

func TestNewFileSyncedButNotItsDirectoryIsGone(t *testing.T) {
	fs := MountTest(t, Options{})
	both := filepath.Join(fs.Dir(), "file-and-dir-synced")
	entryOnly := filepath.Join(fs.Dir(), "dir-synced-only")
	fileOnly := filepath.Join(fs.Dir(), "file-synced-only")
	writeFile(t, both, "data", true)
	writeFile(t, entryOnly, "data", false)
	syncDir(t, fs.Dir())
	writeFile(t, fileOnly, "data", true)
	cut(t, fs)
	want(t, both, "data")
	want(t, entryOnly, "") // entry durable, data never synced: empty
	want(t, fileOnly, "<missing>")
}

func TestRenameNeedsTheDirectorysFsync(t *testing.T) {
	fs := MountTest(t, Options{})
	d := fs.Dir()
	durableFile(t, filepath.Join(d, "a"), "A")
	durableFile(t, filepath.Join(d, "b"), "B")
	if err := os.Rename(filepath.Join(d, "a"), filepath.Join(d, "a2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d, "b"), filepath.Join(d, "b2")); err != nil {
		t.Fatal(err)
	}
	cut(t, fs)
	want(t, filepath.Join(d, "a"), "A")
	want(t, filepath.Join(d, "a2"), "<missing>")
	if err := os.Rename(filepath.Join(d, "a"), filepath.Join(d, "a2")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d)
	cut(t, fs)
	want(t, filepath.Join(d, "a"), "<missing>")
	want(t, filepath.Join(d, "a2"), "A")

	// Over an existing file (the atomic replace): without the sync, the
	// old content is back under the name.
	durableFile(t, filepath.Join(d, "target"), "old")
	writeFile(t, filepath.Join(d, "staged"), "new", true)
	if err := os.Rename(filepath.Join(d, "staged"), filepath.Join(d, "target")); err != nil {
		t.Fatal(err)
	}
	want(t, filepath.Join(d, "target"), "new")
	cut(t, fs)
	want(t, filepath.Join(d, "target"), "old")
}

func TestRenameAcrossDirectoriesKeepsWhatEachSyncSaw(t *testing.T) {
	fs := MountTest(t, Options{})
	src, dst := filepath.Join(fs.Dir(), "src"), filepath.Join(fs.Dir(), "dst")
	for _, dir := range []string{src, dst} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	syncDir(t, fs.Dir())
	durableFile(t, filepath.Join(src, "f"), "F")
	if err := os.Rename(filepath.Join(src, "f"), filepath.Join(dst, "f")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dst) // the source directory is not synced
	cut(t, fs)
	// Both synced entries survive: one file, two names.
	want(t, filepath.Join(src, "f"), "F")
	want(t, filepath.Join(dst, "f"), "F")
	a, errA := os.Stat(filepath.Join(src, "f"))
	b, errB := os.Stat(filepath.Join(dst, "f"))
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("after the cut, src/f and dst/f are not one file: %v %v", errA, errB)
	}
}

func TestRenameExchangeNeedsTheDirectorysFsync(t *testing.T) {
	fs := MountTest(t, Options{})
	d := fs.Dir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	durableFile(t, a, "A")
	durableFile(t, b, "B")
	exchange := func() {
		t.Helper()
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			t.Fatalf("renameat2 RENAME_EXCHANGE: %v", err)
		}
	}
	exchange()
	want(t, a, "B")
	want(t, b, "A")
	cut(t, fs)
	want(t, a, "A")
	want(t, b, "B")
	exchange()
	syncDir(t, d)
	cut(t, fs)
	want(t, a, "B")
	want(t, b, "A")

	// A directory with a file: exchanged, synced, the file goes with it.
	sub := filepath.Join(d, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	durableFile(t, filepath.Join(sub, "inner"), "I")
	syncDir(t, d)
	if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, a, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	syncDir(t, d)
	cut(t, fs)
	want(t, filepath.Join(a, "inner"), "I")
	want(t, sub, "B")
}

// A directory moved to another parent and synced there comes back there,
// even while the parent it left still holds a synced entry for it: the
// later sync saw the later state. Both cases put the stale entry first in
// name order ("a" before "b"), where the layer used to bring it back.
func TestMovedDirectoryComesBackWhereTheLastSyncSawIt(t *testing.T) {
	fs := MountTest(t, Options{})
	a, b := filepath.Join(fs.Dir(), "a"), filepath.Join(fs.Dir(), "b")
	for _, dir := range []string{a, b} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	syncDir(t, fs.Dir())

	// A plain rename: a/moved → b/moved, only b synced after it.
	moved := filepath.Join(a, "moved")
	if err := os.Mkdir(moved, 0o700); err != nil {
		t.Fatal(err)
	}
	durableFile(t, filepath.Join(moved, "f"), "M")
	syncDir(t, a)
	if err := os.Rename(moved, filepath.Join(b, "moved")); err != nil {
		t.Fatal(err)
	}
	syncDir(t, b)
	cut(t, fs)
	want(t, filepath.Join(b, "moved", "f"), "M")
	want(t, filepath.Join(a, "moved", "f"), "<missing>")

	// RENAME_EXCHANGE of a/new with b/old (an export swapped with its
	// rewrite): only b synced after it. b/old is the new directory; the
	// old one was never synced in a, so it is gone.
	for _, p := range []struct{ dir, name, data string }{{a, "new", "N"}, {b, "old", "O"}} {
		if err := os.Mkdir(filepath.Join(p.dir, p.name), 0o700); err != nil {
			t.Fatal(err)
		}
		durableFile(t, filepath.Join(p.dir, p.name, "f"), p.data)
		syncDir(t, p.dir)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(a, "new"), unix.AT_FDCWD, filepath.Join(b, "old"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	syncDir(t, b)
	cut(t, fs)
	want(t, filepath.Join(b, "old", "f"), "N")
	want(t, filepath.Join(a, "new", "f"), "<missing>")

	// The other way round: only a synced after the move back, so the
	// directory is in a again although b's older sync still names it.
	if err := os.Rename(filepath.Join(b, "moved"), moved); err != nil {
		t.Fatal(err)
	}
	syncDir(t, a)
	cut(t, fs)
	want(t, filepath.Join(a, "moved", "f"), "M")
	want(t, filepath.Join(b, "moved", "f"), "<missing>")
}

func TestRenameNoreplaceRefusesAnExistingName(t *testing.T) {
	fs := MountTest(t, Options{})
	a, b, c := filepath.Join(fs.Dir(), "a"), filepath.Join(fs.Dir(), "b"), filepath.Join(fs.Dir(), "c")
	writeFile(t, a, "A", false)
	writeFile(t, b, "B", false)
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("RENAME_NOREPLACE onto an existing name: %v, want EEXIST", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE); err != nil {
		t.Fatal(err)
	}
	want(t, c, "A")
	want(t, b, "B")
}

func TestMkdirNeedsTheParentsFsync(t *testing.T) {
	fs := MountTest(t, Options{})
	lost := filepath.Join(fs.Dir(), "one", "two")
	if err := os.MkdirAll(lost, 0o700); err != nil {
		t.Fatal(err)
	}
	durableFile(t, filepath.Join(lost, "f"), "F") // synced, and two synced: one was not
	syncDir(t, filepath.Dir(lost))
	cut(t, fs)
	if _, err := os.Stat(filepath.Join(fs.Dir(), "one")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a directory whose parent was never synced survived the cut: %v", err)
	}
	if err := os.MkdirAll(lost, 0o700); err != nil {
		t.Fatal(err)
	}
	durableFile(t, filepath.Join(lost, "f"), "F")
	syncDir(t, filepath.Dir(lost))
	syncDir(t, fs.Dir())
	cut(t, fs)
	want(t, filepath.Join(lost, "f"), "F")
	if st, err := os.Stat(lost); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Fatalf("%s after the cut: %v %v", lost, st, err)
	}
}

func TestUnlinkAndRmdirWithoutTheDirectorysFsyncComeBack(t *testing.T) {
	fs := MountTest(t, Options{})
	f, dir := filepath.Join(fs.Dir(), "f"), filepath.Join(fs.Dir(), "dir")
	durableFile(t, f, "F")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs.Dir())
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	cut(t, fs)
	want(t, f, "F")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("removed directory, parent not synced: %v %v", st, err)
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs.Dir())
	cut(t, fs)
	want(t, f, "<missing>")
}

func TestLinksModesAndOpenFlags(t *testing.T) {
	fs := MountTest(t, Options{})
	d := fs.Dir()
	target, hard, soft := filepath.Join(d, "target"), filepath.Join(d, "hard"), filepath.Join(d, "soft")
	durableFile(t, target, "T")
	if err := os.Link(target, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", soft); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // fsync: the mode is durable too
		t.Fatal(err)
	}
	f.Close()
	syncDir(t, d)
	if _, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("O_EXCL on an existing file: %v", err)
	}
	if _, err := os.OpenFile(soft, os.O_RDONLY|syscall.O_NOFOLLOW, 0); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("O_NOFOLLOW on a link: %v, want ELOOP", err)
	}
	cut(t, fs)
	a, errA := os.Stat(target)
	b, errB := os.Stat(hard)
	if errA != nil || errB != nil || !os.SameFile(a, b) || a.Sys().(*syscall.Stat_t).Nlink != 2 {
		t.Fatalf("hard link after the cut: %v %v", errA, errB)
	}
	if a.Mode().Perm() != 0o640 {
		t.Fatalf("mode after the cut %v, want 0640", a.Mode().Perm())
	}
	if l, err := os.Readlink(soft); err != nil || l != "target" {
		t.Fatalf("readlink after the cut: %q %v", l, err)
	}
	want(t, soft, "T")
}

func TestFlockAndFallocate(t *testing.T) {
	fs := MountTest(t, Options{})
	path := filepath.Join(fs.Dir(), "locked")
	writeFile(t, path, "", false)
	f1, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if err := unix.Flock(int(f1.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("a second exclusive flock: %v, want EWOULDBLOCK", err)
	}
	if err := unix.Fallocate(int(f1.Fd()), 0, 0, 8192); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f1.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	if st, err := f1.Stat(); err != nil || st.Size() != 8192 {
		t.Fatalf("size after fallocate: %v %v", st.Size(), err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(fs.Dir(), &sfs); err != nil || sfs.Bavail == 0 {
		t.Fatalf("statfs: %+v %v", sfs, err)
	}
}
