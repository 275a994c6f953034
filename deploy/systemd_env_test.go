package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// The README's systemd quick start copies batchhook.env.example to the
// unit's EnvironmentFile=. systemd gives that file precedence over the
// unit's own Environment= lines, so a value the example sets for a
// variable the unit owns (BATCHHOOK_DATA_DIR=./data once did) silently
// replaces the unit's, and a relative path resolves against / where
// ProtectSystem=strict allows no writes. These tests load the example the
// way systemd does and check every path the result uses against the
// unit's sandbox.

// splitUnitWords splits one Environment= value into its assignments the
// way systemd does: words separated by spaces, each optionally in double
// or single quotes (with backslash escapes inside double quotes).
func splitUnitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '"' || c == '\'':
			inWord = true
			end := i + 1
			for ; end < len(s) && s[end] != c; end++ {
				if c == '"' && s[end] == '\\' && end+1 < len(s) {
					end++
				}
				cur.WriteByte(s[end])
			}
			if end >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			i = end
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// unitEnvironment returns the variables the unit's Environment= lines set,
// later lines overriding earlier ones.
func unitEnvironment(svc map[string][]string) (map[string]string, error) {
	env := map[string]string{}
	for _, line := range svc["Environment"] {
		words, err := splitUnitWords(line)
		if err != nil {
			return nil, fmt.Errorf("Environment=%s: %w", line, err)
		}
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("Environment=%s: %q is not KEY=VALUE", line, w)
			}
			env[k] = v
		}
	}
	return env, nil
}

// parseEnvFile reads an EnvironmentFile= the way systemd does: blank lines
// and lines starting with # or ; are comments, every other line is
// KEY=VALUE, the value optionally quoted. A line that is neither is an
// error here (systemd would ignore it with a warning, hiding a typo).
func parseEnvFile(text string) (map[string]string, error) {
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", n, l)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return env, sc.Err()
}

// sandbox is what a unit's hardening lets the service touch.
type sandbox struct {
	workDir   string
	writable  []string // StateDirectory= (under /var/lib), ReadWritePaths=
	readOnly  []string // ReadOnlyPaths=
	hidden    []string // ProtectHome=yes, InaccessiblePaths=
	privTmp   bool
	strictFS  bool
	stateDirs []string
}

func unitSandbox(svc map[string][]string) sandbox {
	last := func(k string) string {
		if v := svc[k]; len(v) > 0 {
			return v[len(v)-1]
		}
		return ""
	}
	paths := func(k string) []string {
		var out []string
		for _, line := range svc[k] {
			for _, p := range strings.Fields(line) {
				out = append(out, path.Clean(strings.TrimLeft(p, "-+")))
			}
		}
		return out
	}
	sb := sandbox{workDir: "/", strictFS: last("ProtectSystem") == "strict", privTmp: last("PrivateTmp") == "yes"}
	if wd := last("WorkingDirectory"); wd != "" {
		sb.workDir = strings.TrimLeft(wd, "-")
	}
	for _, d := range paths("StateDirectory") {
		sb.stateDirs = append(sb.stateDirs, path.Join("/var/lib", d))
	}
	sb.writable = append(slices.Clone(sb.stateDirs), paths("ReadWritePaths")...)
	sb.readOnly = paths("ReadOnlyPaths")
	sb.hidden = paths("InaccessiblePaths")
	if last("ProtectHome") == "yes" {
		sb.hidden = append(sb.hidden, "/home", "/root", "/run/user")
	}
	return sb
}

// under reports whether p is root or inside it, and how specific root is.
func under(p, root string) (bool, int) {
	if p == root || root == "/" || strings.HasPrefix(p, root+"/") {
		return true, len(root)
	}
	return false, 0
}

// longestMatch returns the length of the most specific root p is under,
// or -1.
func longestMatch(p string, roots []string) int {
	best := -1
	for _, r := range roots {
		if ok, n := under(p, r); ok && n > best {
			best = n
		}
	}
	return best
}

// resolve makes p absolute the way the service sees it: relative to the
// unit's working directory (/ for a system service without one).
func (sb sandbox) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(sb.workDir, p)
}

// checkWrite returns why the service could not write under p, or "".
func (sb sandbox) checkWrite(p string) string {
	if longestMatch(p, sb.hidden) >= 0 {
		return "inaccessible (ProtectHome=/InaccessiblePaths=)"
	}
	if sb.privTmp && (longestMatch(p, []string{"/tmp", "/var/tmp"}) >= 0) {
		return "in the unit's private /tmp (PrivateTmp=yes): gone at every stop and invisible to other processes"
	}
	w := longestMatch(p, sb.writable)
	if ro := longestMatch(p, sb.readOnly); ro >= 0 && ro >= w {
		return "read-only (ReadOnlyPaths=)"
	}
	if sb.strictFS && w < 0 {
		return "read-only under ProtectSystem=strict (not in StateDirectory= or ReadWritePaths=)"
	}
	return ""
}

// checkRead returns why the service could not read p, or "".
func (sb sandbox) checkRead(p string) string {
	if longestMatch(p, sb.hidden) >= 0 {
		return "inaccessible (ProtectHome=/InaccessiblePaths=)"
	}
	if sb.privTmp && (longestMatch(p, []string{"/tmp", "/var/tmp"}) >= 0) {
		return "in the unit's private /tmp (PrivateTmp=yes): the service cannot see the host's file"
	}
	return ""
}

// systemdEnvironment is the environment the service starts with: the
// unit's Environment= lines, then the EnvironmentFile=, which wins.
func systemdEnvironment(svc map[string][]string, envFile string) (map[string]string, error) {
	env, err := unitEnvironment(svc)
	if err != nil {
		return nil, err
	}
	file, err := parseEnvFile(envFile)
	if err != nil {
		return nil, fmt.Errorf("environment file: %w", err)
	}
	for k, v := range file {
		env[k] = v
	}
	return env, nil
}

// sandboxProblems loads envFile under the unit the way systemd does and
// lists every path the daemon would use that the unit's sandbox does not
// allow, and every variable the unit sets that the file overrides.
func sandboxProblems(t *testing.T, unit, envFile string) []string {
	t.Helper()
	svc := unitKeys(t, unit)["Service"]
	env, err := systemdEnvironment(svc, envFile)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := parseEnvFile(envFile)
	own, _ := unitEnvironment(svc)
	var problems []string
	for k, v := range own {
		if fv, ok := file[k]; ok && fv != v {
			problems = append(problems, fmt.Sprintf("%s=%s in the environment file replaces the unit's %s=%s (EnvironmentFile= wins over Environment=)", k, fv, k, v))
		}
	}
	sb := unitSandbox(svc)
	dataDir, ok := env[config.Var("DATA_DIR")]
	if !ok {
		dataDir = config.Defaults().DataDir
	}
	exportDir := env[config.Var("EXPORT_DIR")]
	if exportDir == "" {
		exportDir = filepath.Join(dataDir, "exports")
	}
	for name, p := range map[string]string{"DATA_DIR": dataDir, "EXPORT_DIR": exportDir} {
		abs := sb.resolve(p)
		if why := sb.checkWrite(abs); why != "" {
			problems = append(problems, fmt.Sprintf("BATCHHOOK_%s=%s is %s to the service: %s", name, p, abs, why))
		}
	}
	for _, v := range config.Variables() {
		p := env[v]
		if !strings.HasSuffix(v, "_FILE") || p == "" {
			continue
		}
		abs := sb.resolve(p)
		if why := sb.checkRead(abs); why != "" {
			problems = append(problems, fmt.Sprintf("%s=%s is %s to the service: %s", v, p, abs, why))
		}
		if !filepath.IsAbs(p) {
			problems = append(problems, fmt.Sprintf("%s=%s is relative: it resolves against %s", v, p, sb.workDir))
		}
	}
	if cmd := env[config.Var("EXEC_SINK_COMMAND")]; cmd != "" {
		var argv []string
		if err := json.Unmarshal([]byte(cmd), &argv); err == nil && len(argv) > 0 && filepath.IsAbs(argv[0]) {
			if why := sb.checkRead(argv[0]); why != "" {
				problems = append(problems, fmt.Sprintf("BATCHHOOK_EXEC_SINK_COMMAND's program %s: %s", argv[0], why))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// TestEnvExampleUnderSystemd: the example, copied as documented into the
// unit's EnvironmentFile=, leaves the unit's own settings alone and names
// only paths the hardened unit lets the daemon use.
func TestEnvExampleUnderSystemd(t *testing.T) {
	unit := read(t, filepath.Join("systemd", "batchhook.service"))
	example := read(t, "batchhook.env.example")
	for _, p := range sandboxProblems(t, unit, example) {
		t.Error(p)
	}
	// The settings the daemon then runs with: the unit's data directory.
	env, err := systemdEnvironment(unitKeys(t, unit)["Service"], example)
	if err != nil {
		t.Fatal(err)
	}
	if got := env["BATCHHOOK_DATA_DIR"]; got != "/var/lib/batchhook" {
		t.Errorf("under systemd BATCHHOOK_DATA_DIR = %q, want the unit's StateDirectory /var/lib/batchhook", got)
	}
}

// TestSandboxProblemsFindsUnsafeSettings: the check above can fail, on the
// settings a copied example must not carry.
func TestSandboxProblemsFindsUnsafeSettings(t *testing.T) {
	unit := read(t, filepath.Join("systemd", "batchhook.service"))
	for _, tc := range []struct{ env, want string }{
		{"BATCHHOOK_DATA_DIR=./data\n", "BATCHHOOK_DATA_DIR=./data is /data to the service: read-only under ProtectSystem=strict"},
		{"BATCHHOOK_DATA_DIR=./data\n", "replaces the unit's BATCHHOOK_DATA_DIR=/var/lib/batchhook"},
		{"BATCHHOOK_EXPORT_DIR=/srv/exports\n", "BATCHHOOK_EXPORT_DIR=/srv/exports is /srv/exports to the service: read-only"},
		{"BATCHHOOK_EXPORT_DIR=/etc/batchhook/exports\n", "read-only (ReadOnlyPaths=)"},
		{"BATCHHOOK_EXPORT_DIR=/tmp/exports\n", "PrivateTmp=yes"},
		{"BATCHHOOK_SIGNING_SECRET_FILE=/root/secret\n", "BATCHHOOK_SIGNING_SECRET_FILE=/root/secret is /root/secret to the service: inaccessible"},
		{"BATCHHOOK_API_KEY_FILE=api-key\n", "BATCHHOOK_API_KEY_FILE=api-key is relative"},
		{`BATCHHOOK_EXEC_SINK_COMMAND=["/home/ops/load"]` + "\n", "BATCHHOOK_EXEC_SINK_COMMAND's program /home/ops/load: inaccessible"},
	} {
		problems := sandboxProblems(t, unit, tc.env)
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("env %q: problems %q, want one containing %q", tc.env, problems, tc.want)
		}
	}
	// And passes a file that only uses what the unit allows.
	ok := "BATCHHOOK_EXPORT_DIR=/var/lib/batchhook/out\nBATCHHOOK_SIGNING_SECRET_FILE=/etc/batchhook/s\n"
	if p := sandboxProblems(t, unit, ok); len(p) > 0 {
		t.Errorf("allowed settings reported: %q", p)
	}
}

func TestSystemdEnvironmentParsing(t *testing.T) {
	env, err := unitEnvironment(map[string][]string{"Environment": {
		`A=1 "B=two words" 'C=x"y'`, `A=3`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if env["A"] != "3" || env["B"] != "two words" || env["C"] != `x"y` {
		t.Errorf("unit Environment= parsed as %q", env)
	}
	file, err := parseEnvFile("# c\n; c\n  K = \"v w\"\nL=plain\n")
	if err != nil || file["K"] != "v w" || file["L"] != "plain" {
		t.Errorf("env file parsed as %q, %v", file, err)
	}
	if _, err := parseEnvFile("BATCHHOOK DATA_DIR=/x\n"); err == nil {
		t.Error("a line that is not KEY=VALUE was accepted")
	}
}
