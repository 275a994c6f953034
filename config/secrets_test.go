package config_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestEverySecretIsInTheTable: every Secret field of Config is an entry of
// config.Secrets, and every entry names a Secret field whose file variant
// is the string field and variable beside it. A secret added to Config but
// not to the table would be neither loaded, documented, shown by config
// check nor reloaded: this test fails instead.
func TestEverySecretIsInTheTable(t *testing.T) {
	byField := map[string]config.SecretVar{}
	for _, s := range config.Secrets {
		if _, dup := byField[s.Field]; dup {
			t.Errorf("%s is in config.Secrets twice", s.Field)
		}
		byField[s.Field] = s
	}
	ct := reflect.TypeOf(config.Config{})
	secretType := reflect.TypeOf(config.Secret(nil))
	found := 0
	for _, f := range reflect.VisibleFields(ct) {
		if f.Type != secretType {
			continue
		}
		found++
		if _, ok := byField[f.Name]; !ok {
			t.Errorf("Config.%s is a Secret but not in config.Secrets", f.Name)
		}
	}
	if found != len(config.Secrets) {
		t.Errorf("Config has %d Secret fields, config.Secrets %d entries", found, len(config.Secrets))
	}
	vars := config.Variables()
	for _, s := range config.Secrets {
		f, ok := ct.FieldByName(s.Field)
		if !ok || f.Type != secretType || f.Tag.Get("ignored") != "true" {
			t.Errorf("%s: Config.%s is not an ignored Secret field", s.Name, s.Field)
		}
		if ff, ok := ct.FieldByName(s.Field + "File"); !ok || ff.Type.Kind() != reflect.String {
			t.Errorf("%s: Config.%sFile is not a string field", s.Name, s.Field)
		}
		for _, v := range []string{config.Var(s.Name), config.Var(s.Name + "_FILE")} {
			if !slices.Contains(vars, v) {
				t.Errorf("%s: %s is not among Variables()", s.Name, v)
			}
		}
	}
}
