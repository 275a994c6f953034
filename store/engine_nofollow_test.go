package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenRefusesASymlinkedDatabase: DATA_DIR/batchhook.db as a symbolic
// link (to a file, or dangling) is refused with an error naming the path,
// and whatever it points at is left untouched.
func TestOpenRefusesASymlinkedDatabase(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		dir, elsewhere := t.TempDir(), t.TempDir()
		target := filepath.Join(elsewhere, "planted.db")
		if !dangling {
			if err := os.WriteFile(target, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(dir, FileName)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, time.Second)
		if err == nil {
			s.Close()
			t.Fatalf("dangling=%v: Open followed the symbolic link %s", dangling, link)
		}
		if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), link) {
			t.Fatalf("dangling=%v: Open = %v, want ErrSymlink naming %s", dangling, err, link)
		}
		st, err := os.Stat(target)
		switch {
		case dangling && !errors.Is(err, os.ErrNotExist):
			t.Fatalf("the dangling link's target was created: %v", err)
		case !dangling && (err != nil || st.Size() != 0 || st.Mode().Perm() != 0o644):
			t.Fatalf("the link's target was changed: %v %v", st, err)
		}
	}
}
