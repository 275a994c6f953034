package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// syncRecorder records each fsync'd directory, and checks at the fsync
// that the entry it is for already exists (it is made before its parent
// is synced, not after).
type syncRecorder struct {
	synced []string
	fail   string // a directory whose fsync fails
}

func (r *syncRecorder) sync(dir string) error {
	r.synced = append(r.synced, dir)
	if dir == r.fail {
		return syscall.EIO
	}
	return nil
}

// TestMkdirAllSyncsEachParentTopDown: of a/b/c below an existing root, each
// level is made and its parent fsynced, from the root down; nothing is
// synced for levels that existed; a failed fsync is an error naming the
// directory whose entry it was for.
func TestMkdirAllSyncsEachParentTopDown(t *testing.T) {
	root := t.TempDir()
	r := &syncRecorder{}
	sync := func(dir string) error {
		// The level below dir must exist by now.
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			t.Errorf("fsync of %s before its new entry exists: %v %v", dir, entries, err)
		}
		return r.sync(dir)
	}
	target := filepath.Join(root, "a", "b", "c")
	if err := mkdirAll(target, sync); err != nil {
		t.Fatal(err)
	}
	want := []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}
	if !slices.Equal(r.synced, want) {
		t.Fatalf("synced %q, want %q", r.synced, want)
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() || st.Mode().Perm()&^DirMode != 0 {
		t.Fatalf("made %s: %v %v", target, st, err)
	}
	r.synced = nil
	if err := mkdirAll(target, r.sync); err != nil || len(r.synced) != 0 {
		t.Fatalf("existing path: synced %q, %v; want nothing", r.synced, err)
	}
	if err := mkdirAll(filepath.Join(target, "d"), r.sync); err != nil || !slices.Equal(r.synced, []string{target}) {
		t.Fatalf("one level: synced %q, %v; want %s", r.synced, err, target)
	}

	r = &syncRecorder{fail: filepath.Join(root, "x")}
	err := mkdirAll(filepath.Join(root, "x", "y"), r.sync)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), filepath.Join(root, "x", "y")) {
		t.Fatalf("failed fsync: %v, want EIO naming %s", err, filepath.Join(root, "x", "y"))
	}
}

// TestMkdirAllRefusesWhatItCannotMake: a file on the way, and a parent
// that cannot be written, are errors that say so (the daemon maps them to
// a configuration error).
func TestMkdirAllRefusesWhatItCannotMake(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(file, "d")); !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), file) {
		t.Fatalf("below a file: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root writes any directory")
	}
	ro := filepath.Join(root, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(ro, "d", "e")); !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), ro) {
		t.Fatalf("in a read-only directory: %v", err)
	}
}

// TestOpenDirAtSyncsTheParentOfWhatItMakes: a directory OpenDirAt makes is
// durable when it returns (its parent fsynced); one it only opens costs
// no fsync; a failed fsync is an error and no directory is handed back.
func TestOpenDirAtSyncsTheParentOfWhatItMakes(t *testing.T) {
	root := t.TempDir()
	r, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var synced []string
	sync := func(f *os.File) error {
		if _, err := os.Stat(filepath.Join(root, "d")); err != nil {
			t.Errorf("parent fsynced before the new directory exists: %v", err)
		}
		synced = append(synced, f.Name())
		return nil
	}
	d, created, err := openDirAt(r, "d", true, sync)
	if err != nil || !created {
		t.Fatalf("make d: %v %v", created, err)
	}
	d.Close()
	if !slices.Equal(synced, []string{root}) {
		t.Fatalf("synced %q, want the parent %s", synced, root)
	}
	if d, _, err = openDirAt(r, "d", true, sync); err != nil || len(synced) != 1 {
		t.Fatalf("reopen: synced %q, %v; want no fsync", synced, err)
	}
	d.Close()
	failing := func(*os.File) error { return syscall.EIO }
	if d, _, err := openDirAt(r, "e", true, failing); !errors.Is(err, syscall.EIO) || d != nil || !strings.Contains(err.Error(), filepath.Join(root, "e")) {
		t.Fatalf("failed fsync: %v %v, want EIO naming %s", d, err, filepath.Join(root, "e"))
	}
}

// TestOpenDirAtNamesALink: a link where a directory belongs is reported as
// a link (the kernel says "not a directory" for O_DIRECTORY|O_NOFOLLOW on
// one, which sends an operator looking for a file), a file as not a
// directory; both are ErrUnsafePath.
func TestOpenDirAtNamesALink(t *testing.T) {
	root := t.TempDir()
	r, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"link": "is a symbolic link", "file": "is not a directory"} {
		_, _, err := OpenDirAt(r, name, true)
		if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(root, name)+" "+want) {
			t.Errorf("%s: %v, want ErrUnsafePath saying %q", name, err, want)
		}
	}
}

// TestSettleSyncsTheParentThenTheDirectory: a directory that exists is
// synced into its parent and then itself, whether or not this run made
// it; a parent that cannot be opened for lack of permission is passed
// over, any other failure is an error naming the directory.
func TestSettleSyncsTheParentThenTheDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	if err := os.Mkdir(dir, DirMode); err != nil {
		t.Fatal(err)
	}
	r := &syncRecorder{}
	if err := settle(dir, r.sync); err != nil {
		t.Fatal(err)
	}
	if want := []string{root, dir}; !slices.Equal(r.synced, want) {
		t.Fatalf("synced %q, want %q", r.synced, want)
	}
	denied := func(d string) error {
		if d == root {
			return &os.PathError{Op: "open", Path: d, Err: syscall.EACCES}
		}
		return nil
	}
	if err := settle(dir, denied); err != nil {
		t.Fatalf("unreadable parent: %v, want it passed over", err)
	}
	r = &syncRecorder{fail: root}
	if err := settle(dir, r.sync); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("failed fsync of the parent: %v, want an error naming %s", err, dir)
	}
	r = &syncRecorder{fail: dir}
	if err := settle(dir, r.sync); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("failed fsync of the directory: %v, want an error naming %s", err, dir)
	}
}
