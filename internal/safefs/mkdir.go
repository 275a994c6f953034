package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A directory batchhook makes is durable before anything in it is
// promised (docs/decisions.md, 38): a new directory is an entry in its
// parent, and a power cut keeps that entry only once the parent is
// fsynced; until then the directory and everything below it may vanish,
// however carefully each file inside was synced.

// MkdirAll makes the directory path and whichever of its ancestors are
// missing (DirMode, less the umask; an existing one is left as it is),
// and makes each one it made durable: from the deepest ancestor that
// exists down, each level is made and its parent fsynced before the next.
// Unlike os.MkdirAll, a path that exists already costs one stat. Links
// are followed: the path is the operator's (DATA_DIR, EXPORT_DIR). Errors
// name the path; one from mkdir matches what os.Mkdir returns
// (fs.ErrPermission, syscall.EROFS, …).
func MkdirAll(path string) error { return mkdirAll(path, SyncDir) }

// mkdirAll is MkdirAll with the fsync of a directory (tests record it).
func mkdirAll(path string, sync func(dir string) error) error {
	path = filepath.Clean(path)
	var missing []string // deepest first
	for p := path; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return &os.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create %s: %w", path, err)
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		// Made meanwhile by someone else: its parent is synced all the same,
		// since nothing says that someone did.
		if err := os.Mkdir(p, DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := sync(filepath.Dir(p)); err != nil {
			return fmt.Errorf("make %s durable: %w", p, err)
		}
	}
	return nil
}

// SyncDir fsyncs the directory at path, so that the entries made, renamed
// or removed in it survive a power cut.
func SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s to fsync it: %w", path, err)
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	return err
}

// syncFile fsyncs an open directory (or file).
func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

// Settle makes the directory path, which exists, durable where it stands:
// it fsyncs path's parent, then path itself. MkdirAll syncs only what it
// makes; a directory an earlier run made may never have been synced into
// its parent (a version that did not, or a crash between its mkdir and the
// sync), and its entries (the database file, .partial, payments/) into it.
// A start calls Settle before promising anything inside, at the price of
// two fsyncs. A parent this process may not read (a home directory of mode
// 0711) cannot be opened to fsync it and is left as it is: only whoever
// made path could have synced it.
func Settle(path string) error { return settle(path, SyncDir) }

// settle is Settle with the fsync of a directory (tests record it).
func settle(path string, sync func(dir string) error) error {
	path = filepath.Clean(path)
	if parent := filepath.Dir(path); parent != path {
		if err := sync(parent); err != nil && !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("make %s durable: %w", path, err)
		}
	}
	if err := sync(path); err != nil {
		return fmt.Errorf("make the entries of %s durable: %w", path, err)
	}
	return nil
}
