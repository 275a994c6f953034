package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	for _, d := range []struct{ name, path string }{{"DATA_DIR", c.DataDir}, {"EXPORT_DIR", c.ExportDir}} {
		st, err := os.Stat(d.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", Var(d.name), err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: %s is not a directory", Var(d.name), d.path)
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
