package config

import (
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
