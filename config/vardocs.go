package config

import (
	"fmt"
	"reflect"
	"strings"
)

// VarDoc is one daemon variable and its default as `batchhook serve
// --help` shows it.
type VarDoc struct {
	Name    string // BATCHHOOK_LISTEN_ADDR
	Default string // the default tag; "(required)", "(unset)" or a rule
}

// VariableDocs lists every variable the daemon reads, in declaration order
// (each secret just before its _FILE), with its default, from the one
// definition: Config's fields and tags. serve --help prints it, so the two
// cannot drift.
func VariableDocs() []VarDoc {
	required := map[string]bool{"API_BASE_URL": true}
	for _, s := range Secrets {
		required[s.Name] = s.Required
	}
	rules := map[string]string{"EXPORT_DIR": "$" + Var("DATA_DIR") + "/exports"}
	t := reflect.TypeOf(Config{})
	var out []VarDoc
	for _, ev := range envVars() {
		short := strings.TrimPrefix(ev.Key, Prefix+"_")
		if base, ok := strings.CutSuffix(short, "_FILE"); ok && isSecret(base) {
			out = append(out, doc(base, required, nil, ""))
			out = append(out, VarDoc{Name: ev.Key, Default: "(unset)"})
			continue
		}
		sf, _ := t.FieldByName(ev.Field)
		def := sf.Tag.Get("default")
		if def == "" && sf.Type.Kind() == reflect.Bool {
			def = "false"
		}
		out = append(out, doc(short, required, rules, def))
	}
	return out
}

func doc(short string, required map[string]bool, rules map[string]string, def string) VarDoc {
	d := VarDoc{Name: Var(short), Default: def}
	switch {
	case required[short] && isSecret(short):
		d.Default = "(required, or the _FILE below)"
	case required[short]:
		d.Default = "(required)"
	case rules[short] != "":
		d.Default = rules[short]
	case def == "":
		d.Default = "(unset)"
	}
	return d
}

// isSecret reports whether short names one of Secrets: envconfig does not
// see them (Load reads them itself), so VariableDocs adds each before its
// _FILE.
func isSecret(short string) bool {
	_, ok := secretVar(short)
	return ok
}

// Setting is one variable's effective value, as `batchhook config check`
// prints it: a secret only as its fingerprint.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Effective lists every daemon variable with the value c holds, in the
// order of VariableDocs; a secret shows as "fingerprint XXXXXXXX" (the
// started line's value) or "(unset)", a _FILE as its path.
func (c *Config) Effective() []Setting {
	v := reflect.ValueOf(c).Elem()
	fields := map[string]string{}
	for _, ev := range envVars() {
		fields[ev.Key] = ev.Field
	}
	var out []Setting
	for _, d := range VariableDocs() {
		short := d.Name[len(Prefix)+1:]
		s := Setting{Name: d.Name}
		if sv, ok := secretVar(short); ok {
			s.Value = "(unset)"
			if sec := sv.Value(c); len(sec) > 0 {
				s.Value = "fingerprint " + sec.Fingerprint()
			}
		} else if f := v.FieldByName(fields[d.Name]); f.IsValid() {
			s.Value = fmt.Sprint(f.Interface())
		}
		if s.Value == "" {
			s.Value = "(unset)"
		}
		out = append(out, s)
	}
	return out
}
