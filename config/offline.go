package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// Offline is what the offline commands (restore, compact) read: they run
// with the daemon stopped, on its files only, and must not need its
// secrets or provider settings, which Load requires.
type Offline struct {
	DataDir   string
	ExportDir string
	// DataDirFrom says where DataDir came from (the flag, the variable or
	// the default), for the commands to print beside it: an operator who
	// restores into the wrong directory sees why it was chosen.
	DataDirFrom string
}

// LoadOffline reads BATCHHOOK_DATA_DIR (default ./data, as for the
// daemon) and BATCHHOOK_EXPORT_DIR (default $DATA_DIR/exports). A dataDir
// given here (the --data-dir flag) wins over the variable.
func LoadOffline(dataDir string) (Offline, error) {
	o := Offline{DataDir: dataDir, DataDirFrom: "--data-dir"}
	if o.DataDir == "" {
		o.DataDir, o.DataDirFrom = "./data", "the default ./data: neither --data-dir nor "+Var("DATA_DIR")+" is set"
		if v, ok := os.LookupEnv(Var("DATA_DIR")); ok {
			o.DataDir, o.DataDirFrom = v, Var("DATA_DIR")
		}
	}
	if o.DataDir == "" {
		return o, fmt.Errorf("%s: must not be empty", Var("DATA_DIR"))
	}
	o.ExportDir = os.Getenv(Var("EXPORT_DIR"))
	if o.ExportDir == "" {
		o.ExportDir = filepath.Join(o.DataDir, "exports")
	}
	return o, nil
}
