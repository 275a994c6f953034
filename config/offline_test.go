package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadOfflineSaysWhereTheDataDirCameFrom: the flag wins over the
// variable, the variable over the default, and DataDirFrom names the one
// used, so that restore can print why it chose its target.
func TestLoadOfflineSaysWhereTheDataDirCameFrom(t *testing.T) {
	t.Setenv(Var("EXPORT_DIR"), "")
	t.Setenv(Var("DATA_DIR"), "/srv/env")
	o, err := LoadOffline("/srv/flag")
	if err != nil || o.DataDir != "/srv/flag" || o.DataDirFrom != "--data-dir" || o.ExportDir != filepath.Join("/srv/flag", "exports") {
		t.Fatalf("with the flag: %+v %v", o, err)
	}
	o, err = LoadOffline("")
	if err != nil || o.DataDir != "/srv/env" || o.DataDirFrom != Var("DATA_DIR") {
		t.Fatalf("with the variable: %+v %v", o, err)
	}
	// Unset, not empty: an empty variable is an error.
	t.Setenv(Var("DATA_DIR"), "")
	if _, err := LoadOffline(""); err == nil || !strings.Contains(err.Error(), Var("DATA_DIR")) {
		t.Fatalf("an empty variable: %v, want an error naming it", err)
	}
	if err := os.Unsetenv(Var("DATA_DIR")); err != nil { // t.Setenv above restores it
		t.Fatal(err)
	}
	o, err = LoadOffline("")
	if err != nil || o.DataDir != "./data" || !strings.Contains(o.DataDirFrom, "default ./data") {
		t.Fatalf("with neither: %+v %v", o, err)
	}
}
