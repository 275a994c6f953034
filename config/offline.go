package config

import (
	"fmt"
	"os"
)

// LoadDataDir reads BATCHHOOK_DATA_DIR alone (default ./data, as for the
// daemon), for the offline commands (restore, compact): they run with the
// daemon stopped, on its database only, and must not need its secrets or
// its provider settings, which Load requires.
func LoadDataDir() (string, error) {
	dir := "./data"
	if v, ok := os.LookupEnv(Var("DATA_DIR")); ok {
		dir = v
	}
	if dir == "" {
		return "", fmt.Errorf("%s: must not be empty", Var("DATA_DIR"))
	}
	return dir, nil
}
