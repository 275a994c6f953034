package config

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzEnvFile: reading any env file never panics, and agrees with a
// reference reading of the syntax docs/configuration.md gives (systemd's
// EnvironmentFile=: blanks are spaces and tabs, as systemd's are): the
// same variables with the same values, or an error at the same line that
// names the file and the line and quotes nothing of it but the name. Every
// variable read is a valid name whose value holds no line end, and written
// back in each form that can hold it (double quotes with escapes, single
// quotes, bare) it reads back the same.
func FuzzEnvFile(f *testing.F) {
	for _, s := range []string{
		"A=1\nB = two \n# comment\n; comment\n\nexport C=3\n",
		"S=\"a \\\"q\\\" \\\\ \\$ \\` \\n\"\nT='lit \\ \"x\"'\n",
		"A=1\r\nB=\"x\"  \r\n", "A=1\nA=2", "=x", "A", "A='x", "A=\"x", "A=\"x\" y", "A='x' y",
		"  export   NAME_1 =  v v  ", "export =1", "exportA=1", "A=\"\\", "1A=x", "A=\u00a0x\u00a0", "A=x\v",
		"\u00a0# not a comment", "A=\"\t\"", "A=#x", "A=x=y", "A=\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/etc/batchhook.env"
		got, err := readEnvFrom(path, strings.NewReader(string(data)))
		want, badLine, badName := referenceEnv(string(data))
		if badLine > 0 {
			if err == nil {
				t.Fatalf("%q: read %v; the reference refuses line %d", data, got.Vars, badLine)
			}
			checkEnvError(t, data, err.Error(), path, badLine, badName)
			return
		}
		if err != nil {
			t.Fatalf("%q: %v; the reference reads %v", data, err, want)
		}
		if len(got.Vars) != len(want) {
			t.Fatalf("%q: read %q, the reference %q", data, got.Vars, want)
		}
		for name, v := range want {
			if g, ok := got.Vars[name]; !ok || g != v {
				t.Fatalf("%q: %s = %q (set %v), the reference reads %q", data, name, g, ok, v)
			}
		}
		for name, v := range got.Vars {
			if !envName.MatchString(name) || strings.ContainsAny(v, "\n") {
				t.Fatalf("%q: read %q = %q", data, name, v)
			}
			roundTrip(t, name, v)
		}
	})
}

// refBlanks are the blanks around a name and a value, as systemd has them.
const refBlanks = " \t\r"

var (
	refName     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)[ \t\r]*=[ \t\r]*(.*)$`)
	refSingle   = regexp.MustCompile(`^'([^']*)'[ \t\r]*$`)
	refDouble   = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"[ \t\r]*$`)
	refEscape   = regexp.MustCompile("\\\\([\"\\\\$`])")
	refNoEscape = regexp.MustCompile(`^"`)
)

// referenceEnv reads data as the documented syntax says, by other means
// than the reader (regular expressions over whole lines): the variables,
// or the first line refused and the name it had, if any. Its blanks are
// " \t\r" (refBlanks, and written out in its patterns).
func referenceEnv(data string) (vars map[string]string, badLine int, badName string) {
	lines := strings.Split(data, "\n")
	if strings.HasSuffix(data, "\n") {
		lines = lines[:len(lines)-1]
	}
	vars = map[string]string{}
	for i, line := range lines {
		line = strings.Trim(strings.TrimSuffix(line, "\r"), refBlanks)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimLeft(rest, refBlanks)
		}
		m := refName.FindStringSubmatch(line)
		if m == nil {
			return nil, i + 1, ""
		}
		name, value := m[1], m[2]
		switch {
		case strings.HasPrefix(value, "'"):
			q := refSingle.FindStringSubmatch(value)
			if q == nil {
				return nil, i + 1, name
			}
			value = q[1]
		case refNoEscape.MatchString(value):
			q := refDouble.FindStringSubmatch(value)
			if q == nil {
				return nil, i + 1, name
			}
			value = refEscape.ReplaceAllString(q[1], "$1")
		}
		vars[name] = value
	}
	return vars, 0, ""
}

// envRefusals are the reasons after "NAME: " (or alone, for a line that
// is no assignment): none quotes the line.
var envRefusals = regexp.MustCompile(`^(the value's single quote is not closed on its line|text after the value's closing single quote|` +
	`the value's double quote is not closed on its line|text after the value's closing double quote)$`)

// checkEnvError: the error names the file and the line, and of the line
// at most the variable's name.
func checkEnvError(t *testing.T, data []byte, msg, path string, line int, name string) {
	t.Helper()
	prefix := "env file " + path + ", line " + strconv.Itoa(line) + ": "
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		t.Fatalf("%q: error %q, want it to start %q", data, msg, prefix)
	}
	if name == "" {
		if rest != "not a NAME=VALUE assignment (a comment starts with # or ;)" {
			t.Fatalf("%q: error %q for a line that is no assignment", data, msg)
		}
		return
	}
	if r, ok := strings.CutPrefix(rest, name+": "); !ok || !envRefusals.MatchString(r) {
		t.Fatalf("%q: error %q, want %s: and a reason that quotes nothing", data, msg, name)
	}
}

// roundTrip writes name=value back in each form that can hold value and
// reads it again.
func roundTrip(t *testing.T, name, value string) {
	t.Helper()
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(value)
	lines := []string{name + `="` + esc + `"`, "export " + name + ` = "` + esc + `"  `}
	if !strings.Contains(value, "'") {
		lines = append(lines, name+"='"+value+"'")
	}
	if value != "" && strings.Trim(value, refBlanks) == value && value[0] != '"' && value[0] != '\'' {
		lines = append(lines, name+"="+value)
	}
	for _, line := range lines {
		n, v, ok, err := parseEnvLine(line)
		if err != nil || !ok || n != name || v != value {
			t.Fatalf("%s = %q written as %q reads back %q = %q (%v %v)", name, value, line, n, v, ok, err)
		}
	}
}
