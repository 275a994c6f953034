package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// EnvFile is the variables of an env file (serve --env-file), read by
// ReadEnvFile, for LoadWithFile.
type EnvFile struct {
	Path string
	Vars map[string]string
}

// envName is a variable name as a shell or systemd accepts it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReadEnvFile reads path in the syntax of systemd's EnvironmentFile=, so
// that the file a unit loads can be handed to `serve --env-file` as it is:
// KEY=VALUE lines; blank lines and lines starting with # or ; skipped;
// the value's surrounding blanks dropped; a value in double quotes takes
// \" \\ \$ and \` as escapes, one in single quotes is taken literally; an
// "export " before the name is allowed. A later line for the same name
// wins. Any other line is an error naming the file and the line number;
// the line itself is never quoted, since it may hold a secret.
func ReadEnvFile(path string) (*EnvFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	defer f.Close()
	return readEnvFrom(path, f)
}

// readEnvFrom is ReadEnvFile's reading of the file path, open as r.
func readEnvFrom(path string, r io.Reader) (*EnvFile, error) {
	out := &EnvFile{Path: path, Vars: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		name, value, ok, err := parseEnvLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("env file %s, line %d: %w", path, n, err)
		}
		if ok {
			out.Vars[name] = value
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read env file %s: %w", path, err)
	}
	return out, nil
}

// envBlanks are the blanks dropped around a name and a value: systemd's
// (space, tab, carriage return), not every Unicode space. A value that
// ends in a non-breaking space or a form feed keeps it under systemd, so
// it must here: the secret tried by hand must be the one the unit loads.
const envBlanks = " \t\r"

// parseEnvLine parses one line of an env file; ok is false for a blank
// line or a comment.
func parseEnvLine(line string) (name, value string, ok bool, err error) {
	line = strings.Trim(strings.TrimSuffix(line, "\r"), envBlanks)
	if line == "" || line[0] == '#' || line[0] == ';' {
		return "", "", false, nil
	}
	line = strings.TrimPrefix(line, "export ")
	name, value, found := strings.Cut(line, "=")
	name = strings.Trim(name, envBlanks)
	if !found || !envName.MatchString(name) {
		return "", "", false, fmt.Errorf("not a NAME=VALUE assignment (a comment starts with # or ;)")
	}
	value = strings.Trim(value, envBlanks)
	if value == "" {
		return name, "", true, nil
	}
	switch q := value[0]; q {
	case '\'':
		end := strings.IndexByte(value[1:], '\'')
		if end < 0 {
			return "", "", false, fmt.Errorf("%s: the value's single quote is not closed on its line", name)
		}
		if strings.Trim(value[end+2:], envBlanks) != "" {
			return "", "", false, fmt.Errorf("%s: text after the value's closing single quote", name)
		}
		return name, value[1 : end+1], true, nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(value); i++ {
			c := value[i]
			switch {
			case c == '\\' && i+1 < len(value) && strings.IndexByte("\"\\$`", value[i+1]) >= 0:
				i++
				b.WriteByte(value[i])
			case c == '"':
				if strings.Trim(value[i+1:], envBlanks) != "" {
					return "", "", false, fmt.Errorf("%s: text after the value's closing double quote", name)
				}
				return name, b.String(), true, nil
			default:
				b.WriteByte(c)
			}
		}
		return "", "", false, fmt.Errorf("%s: the value's double quote is not closed on its line", name)
	}
	return name, value, true, nil
}
