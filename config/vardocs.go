package config

import (
	"fmt"
	"reflect"
	"strings"
)

// secretNames are the secrets Load reads itself (each also from a _FILE):
// envconfig does not see them, so Variables and VariableDocs add them.
var secretNames = []string{"SIGNING_SECRET", "API_KEY", "ADMIN_TOKEN", "HTTP_SINK_SECRET", "KAFKA_SASL_PASSWORD", "NATS_TOKEN", "PAYMENTS_SIGNING_SECRET"}

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
	required := map[string]bool{"SIGNING_SECRET": true, "API_KEY": true, "API_BASE_URL": true}
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

func isSecret(short string) bool {
	for _, s := range secretNames {
		if s == short {
			return true
		}
	}
	return false
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
	secrets := map[string]Secret{"SIGNING_SECRET": c.SigningSecret, "API_KEY": c.APIKey, "ADMIN_TOKEN": c.AdminToken,
		"HTTP_SINK_SECRET": c.HTTPSinkSecret, "KAFKA_SASL_PASSWORD": c.KafkaSASLPassword, "NATS_TOKEN": c.NatsToken,
		"PAYMENTS_SIGNING_SECRET": c.PaymentsSigningSecret}
	var out []Setting
	for _, d := range VariableDocs() {
		short := d.Name[len(Prefix)+1:]
		s := Setting{Name: d.Name}
		if sec, ok := secrets[short]; ok {
			s.Value = "(unset)"
			if len(sec) > 0 {
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
