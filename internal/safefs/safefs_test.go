package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpensWithoutFollowingLinks(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	r, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, created, err := OpenDirAt(r, "d", true)
	if err != nil || !created {
		t.Fatalf("make d: %v %v", created, err)
	}
	defer d.Close()
	f, created, err := OpenFileAt(d, "f", os.O_RDWR|os.O_CREATE, false)
	if err != nil || !created {
		t.Fatalf("make f: %v %v", created, err)
	}
	f.Close()
	for name, want := range map[string]os.FileMode{"d": DirMode, "d/f": FileMode} {
		st, err := os.Stat(filepath.Join(root, name))
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v; want %o under umask 0", name, st.Mode(), err, want)
		}
	}
	if f, created, err = OpenFileAt(d, "f", os.O_RDWR|os.O_CREATE, false); err != nil || created {
		t.Fatalf("reopen f: %v %v", created, err)
	}
	f.Close()
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "d", "f"), filepath.Join(root, "d", "hard")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenFileAt(d, "link", os.O_RDWR|os.O_CREATE, false); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("file link: %v", err)
	}
	if _, _, err := OpenDirAt(r, "dirlink", true); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("directory link: %v", err)
	}
	if _, _, err := OpenFileAt(d, "hard", os.O_RDONLY, false); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("hard link: %v", err)
	}
	if f, _, err := OpenFileAt(d, "hard", os.O_RDONLY, true); err != nil {
		t.Errorf("hard link, linked allowed: %v", err)
	} else {
		f.Close()
	}
	if _, _, err := OpenDirAt(r, "missing", false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}
