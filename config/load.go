package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// envVar is one variable of Config: its full name and the Go field it sets.
// The names come from envconfig's split_words rule, so Variables, the
// loader and `serve --help` cannot disagree.
type envVar struct {
	Key   string // BATCHHOOK_API_BASE_URL
	Field string // APIBaseURL (promoted names reach embedded structs)
}

// envVars returns the plain (non-secret) variables of Config in
// declaration order, as envconfig names them.
func envVars() []envVar {
	var buf strings.Builder
	tmpl := template.Must(template.New("vars").Parse("{{range .}}{{.Key}} {{.Name}}\n{{end}}"))
	_ = envconfig.Usaget(Prefix, &Config{}, &buf, tmpl) // only fails for a non-struct spec
	var out []envVar
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		key, field, _ := strings.Cut(line, " ")
		out = append(out, envVar{Key: key, Field: field})
	}
	return out
}

// readEnv sets every plain field of c from its variable, or from its
// default tag when the variable is unset. It is envconfig's Process with
// two differences an operator sees: durations also accept whole days
// ("7d"), and every value that does not parse is reported, not only the
// first.
func readEnv(c *Config, e env) error {
	v := reflect.ValueOf(c).Elem()
	var errs []error
	for _, ev := range envVars() {
		sf, _ := v.Type().FieldByName(ev.Field)
		value, set := e.lookup(ev.Key)
		def, hasDef := sf.Tag.Lookup("default")
		if !set && !hasDef {
			continue
		}
		if !set {
			value = def
		}
		if err := setField(v.FieldByName(ev.Field), value); err != nil {
			errs = append(errs, fmt.Errorf("%s: cannot parse %q: %w", ev.Key, value, err))
		}
	}
	return joinErrs(errs)
}

// joinErrs joins errors on one line ("a; b"): a start error is one line of
// stderr and one log field.
func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// setField parses value into f by f's type: the kinds Config uses.
func setField(f reflect.Value, value string) error {
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := ParseDuration(value)
		f.SetInt(int64(d))
		return err
	case f.Kind() == reflect.String:
		f.SetString(value)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return errors.New("want true or false")
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(value, 0, f.Type().Bits())
		if err != nil {
			return errors.New("want a whole number")
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported kind %s", f.Kind())
	}
	return nil
}

// wholeDays is a duration written in days, the unit retention is thought in.
var wholeDays = regexp.MustCompile(`^([0-9]{1,5})d$`)

// ParseDuration reads a duration as Go writes them (90s, 15m, 168h) or a
// whole number of days (7d = 168h). Its error says what to write instead.
func ParseDuration(s string) (time.Duration, error) {
	if m := wholeDays.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration; use hours, e.g. 168h (or whole days, e.g. 7d), minutes (15m) or seconds (30s)")
	}
	return d, nil
}

// ParseLogLevel reads LOG_LEVEL case-insensitively, accepting "warning"
// for warn, and returns the canonical name (trace, debug, info, warn,
// error).
func ParseLogLevel(s string) (string, bool) {
	l := strings.ToLower(strings.TrimSpace(s))
	if l == "warning" {
		l = "warn"
	}
	return l, validLevels[l]
}
