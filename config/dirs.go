package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Warning is something Load accepted but the operator should know about:
// a secret file others can read, a directory whose mode it repaired. The
// config package has no logger; the daemon logs each one at start.
type Warning struct {
	Event    string // the log event: secret_file_readable, permissions_repaired
	Variable string // the variable that names the file or directory
	Path     string
	Mode     fs.FileMode // the permission bits found
	Message  string
}

// checkDirs refuses a data or export directory that group or others can
// write to: anyone who can write there can replace the database or plant
// files in an export. With BATCHHOOK_REPAIR_PERMISSIONS=true it sets such a
// directory to 0700 instead and records a Warning. A directory that does
// not exist yet is created 0700 later (store, export).
func (c *Config) checkDirs() error {
	exportVar, _ := c.ExportDirVar()
	for _, d := range []struct{ name, path string }{{"DATA_DIR", c.DataDir}, {exportVar, c.ExportDir}} {
		st, err := os.Stat(d.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w; %s", Var(d.name), err, DirFix(err))
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: %s is not a directory; %s", Var(d.name), d.path, DirFix(syscall.ENOTDIR))
		}
		mode := st.Mode().Perm()
		if mode&0o022 == 0 {
			continue
		}
		if !c.RepairPermissions {
			return fmt.Errorf("%s: %s is writable by group or others (mode %04o); chmod 0700 it, or set %s=true to have batchhook do it",
				Var(d.name), d.path, mode, Var("REPAIR_PERMISSIONS"))
		}
		if err := os.Chmod(d.path, 0o700); err != nil {
			return fmt.Errorf("%s: repair the mode of %s (%04o) to 0700: %w", Var(d.name), d.path, mode, err)
		}
		c.Warnings = append(c.Warnings, Warning{Event: "permissions_repaired", Variable: Var(d.name), Path: d.path, Mode: mode,
			Message: "the directory was writable by group or others; its mode is now 0700 (BATCHHOOK_REPAIR_PERMISSIONS)"})
	}
	return nil
}

// ExportDirVar names the variable to change when the export directory
// cannot be used, and that variable's path: EXPORT_DIR when it is set to a
// directory of its own, DATA_DIR when it is the default below the data
// directory, which is all the operator wrote.
func (c *Config) ExportDirVar() (name, path string) {
	if filepath.Clean(c.ExportDir) == filepath.Join(c.DataDir, "exports") {
		return "DATA_DIR", c.DataDir
	}
	return "EXPORT_DIR", c.ExportDir
}

// DirFix says how to fix a directory the daemon cannot stat, create or
// write, from the error it got.
func DirFix(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "the user batchhook runs as must own it and be able to read and write it (chmod 0700)"
	case errors.Is(err, syscall.EROFS):
		return "it is on a read-only file system; choose a writable path"
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist):
		return "a file is in the way; move it, or choose another path"
	case errors.Is(err, fs.ErrNotExist):
		return "its parent directory does not exist; create it, or choose another path"
	}
	return "choose a directory batchhook can create and write"
}
