package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

func writeEnvFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "batchhook.env")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadEnvFileSyntax: comments, blank lines, quotes, escapes, export and
// a repeated name, as systemd's EnvironmentFile= reads them.
func TestReadEnvFileSyntax(t *testing.T) {
	p := writeEnvFile(t, strings.Join([]string{
		"# a comment",
		"; another comment",
		"",
		"   ",
		"PLAIN=value with spaces  ",
		"  INDENTED = x",
		`DOUBLE="a \"quoted\" \\ \$HOME value # not a comment"`,
		`SINGLE='it is \n literal'`,
		"EMPTY=",
		`EMPTY_QUOTED=""`,
		"export EXPORTED=yes",
		"EQUALS=a=b=c",
		"CRLF=line\r",
		"REPEATED=first",
		"REPEATED=second",
	}, "\n"))
	f, err := config.ReadEnvFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PLAIN": "value with spaces", "INDENTED": "x", "DOUBLE": `a "quoted" \ $HOME value # not a comment`,
		"SINGLE": `it is \n literal`, "EMPTY": "", "EMPTY_QUOTED": "", "EXPORTED": "yes", "EQUALS": "a=b=c",
		"CRLF": "line", "REPEATED": "second",
	}
	if len(f.Vars) != len(want) {
		t.Errorf("read %d variables, want %d: %q", len(f.Vars), len(want), f.Vars)
	}
	for k, v := range want {
		if got, ok := f.Vars[k]; !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
}

// TestReadEnvFileErrorsNameTheFileAndLine: a line that is not an
// assignment is an error with the file and the line number, and the
// line's text (which may be a secret) is not in it.
func TestReadEnvFileErrorsNameTheFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		bad  string
		want string
	}{
		{"s3cr3t-pasted-alone", "not a NAME=VALUE assignment"},
		{"1BAD=s3cr3t", "not a NAME=VALUE assignment"},
		{"=s3cr3t", "not a NAME=VALUE assignment"},
		{`OPEN="s3cr3t`, "OPEN: the value's double quote is not closed"},
		{`OPEN='s3cr3t`, "OPEN: the value's single quote is not closed"},
		{`AFTER="s3cr3t" tail`, "AFTER: text after the value's closing double quote"},
	} {
		p := writeEnvFile(t, "# header\nGOOD=1\n\n"+tc.bad+"\nLATER=2\n")
		_, err := config.ReadEnvFile(p)
		if err == nil {
			t.Fatalf("%q: no error", tc.bad)
		}
		msg := err.Error()
		if !strings.Contains(msg, p+", line 4: ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "s3cr3t") {
			t.Errorf("%q: error %q; want the file, line 4 and %q, without the value", tc.bad, msg, tc.want)
		}
	}
	if _, err := config.ReadEnvFile(filepath.Join(t.TempDir(), "missing.env")); err == nil || !strings.Contains(err.Error(), "missing.env") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestEnvFileIsBeneathTheEnvironment: LoadWithFile takes settings and
// secrets from the file, and a variable the process environment sets wins.
func TestEnvFileIsBeneathTheEnvironment(t *testing.T) {
	cleanEnv(t)
	p := writeEnvFile(t, "BATCHHOOK_SIGNING_SECRET="+reqSecret+"\nBATCHHOOK_API_KEY='"+reqKey+"'\n"+
		"BATCHHOOK_API_BASE_URL="+reqURL+"\nBATCHHOOK_PAGE_LIMIT=7\nBATCHHOOK_FETCH_WORKERS=3\nBATCHHOOK_SIGNING_SECRETS=x\n")
	t.Setenv("BATCHHOOK_FETCH_WORKERS", "5")
	f, err := config.ReadEnvFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.LoadWithFile(config.TestSinks, f)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.SigningSecret) != reqSecret || string(c.APIKey) != reqKey || c.APIBaseURL != reqURL || c.PageLimit != 7 {
		t.Errorf("from the file: url %q page limit %d, secrets as read: %v %v", c.APIBaseURL, c.PageLimit,
			string(c.SigningSecret) == reqSecret, string(c.APIKey) == reqKey)
	}
	if c.FetchWorkers != 5 {
		t.Errorf("FETCH_WORKERS = %d, want the environment's 5 over the file's 3", c.FetchWorkers)
	}
	var unknown bool
	for _, w := range c.Warnings {
		unknown = unknown || (w.Event == "unknown_variable" && w.Variable == "BATCHHOOK_SIGNING_SECRETS")
	}
	if !unknown {
		t.Errorf("a misspelt variable in the file is not warned about: %+v", c.Warnings)
	}
}

// TestEnvExampleIsAnEnvFile: the shipped example loads with --env-file as
// it is, and sets what it documents.
func TestEnvExampleIsAnEnvFile(t *testing.T) {
	f, err := config.ReadEnvFile(filepath.Join("..", "deploy", "batchhook.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Vars["BATCHHOOK_API_BASE_URL"] == "" || f.Vars["BATCHHOOK_SIGNING_SECRET_FILE"] == "" {
		t.Fatalf("the example sets no base URL or signing secret file: %q", f.Vars)
	}
	known := config.KnownVariables()
	for k := range f.Vars {
		if !slices.Contains(known, k) {
			t.Errorf("the example sets %s, which batchhook does not read", k)
		}
	}
}
