package e2e

// batchhook config check.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runWithEnv(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestConfigCheckPrintsTheEffectiveConfiguration(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "signing-secret")
	if err := os.WriteFile(file, []byte(fpSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newSetupForConfig(t)
	delete(env, "BATCHHOOK_SIGNING_SECRET")
	env["BATCHHOOK_SIGNING_SECRET_FILE"] = file
	env["BATCHHOOK_API_KEY"] = fpKey
	env["BATCHHOOK_RETENTION"] = "7d"
	env["BATCHHOOK_SUBMIT_PER_MINUTE"] = "12"
	out, stderr, code := runWithEnv(t, env, "config", "check")
	if code != 0 || stderr != "" {
		t.Fatalf("config check: exit %d, stderr %q\n%s", code, stderr, out)
	}
	for _, want := range []string{
		`(?m)^BATCHHOOK_SIGNING_SECRET +fingerprint ` + fpSecretHash + `$`,
		`(?m)^BATCHHOOK_SIGNING_SECRET_FILE +` + regexp.QuoteMeta(file) + `$`,
		`(?m)^BATCHHOOK_API_KEY +fingerprint ` + fpKeyHash + `$`,
		`(?m)^BATCHHOOK_RETENTION +168h0m0s$`,
		`(?m)^BATCHHOOK_LISTEN_ADDR +:8080$`,
		`(?m)^BATCHHOOK_ADMIN_TOKEN +\(unset\)$`,
		`(?m)^warning: BATCHHOOK_SUBMIT_PER_MINUTE \(limit_above_provider\)`,
		`(?m)^configuration OK$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("config check output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, fpSecret) || strings.Contains(out, strings.TrimSpace(fpKey)) {
		t.Fatalf("config check printed a secret:\n%s", out)
	}
	out, _, code = runWithEnv(t, env, "config", "check", "--json")
	var doc struct {
		Settings []struct{ Name, Value string }
		Warnings []struct{ Event, Variable string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || len(doc.Warnings) == 0 {
		t.Fatalf("config check --json: exit %d, %v:\n%s", code, err, out)
	}
	found := false
	for _, s := range doc.Settings {
		found = found || s.Name == "BATCHHOOK_SIGNING_SECRET" && s.Value == "fingerprint "+fpSecretHash
	}
	if !found {
		t.Fatalf("--json settings lack the secret's fingerprint:\n%s", out)
	}

	// --env-file: the file fills in, the environment wins, as for serve.
	envFile := filepath.Join(t.TempDir(), "batchhook.env")
	if err := os.WriteFile(envFile, []byte("# local run\nBATCHHOOK_FETCH_WORKERS=3\nBATCHHOOK_SUBMIT_PER_MINUTE=5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runWithEnv(t, env, "config", "check", "--env-file", envFile)
	if code != 0 || !regexp.MustCompile(`(?m)^BATCHHOOK_FETCH_WORKERS +3$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^BATCHHOOK_SUBMIT_PER_MINUTE +12$`).MatchString(out) {
		t.Fatalf("config check --env-file: exit %d, stderr %q; want FETCH_WORKERS 3 from the file and SUBMIT_PER_MINUTE 12 from the environment:\n%s", code, stderr, out)
	}
	if err := os.WriteFile(envFile, []byte("BATCHHOOK_FETCH_WORKERS=3\nnot an assignment\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runWithEnv(t, env, "config", "check", "--env-file", envFile); code != 2 || !strings.Contains(stderr, envFile) || !strings.Contains(stderr, "2") {
		t.Fatalf("config check --env-file with a bad line: exit %d, stderr %q; want 2 naming the file and line", code, stderr)
	}

	env["BATCHHOOK_API_BASE_URL"] = "provider.example/base"
	out, stderr, code = runWithEnv(t, env, "config", "check")
	if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "BATCHHOOK_API_BASE_URL") {
		t.Fatalf("config check of a bad URL: exit %d, stdout %q, stderr %q; want 2 and one line naming the variable", code, out, stderr)
	}
	if _, _, code := runWithEnv(t, env, "config", "show"); code != 2 {
		t.Fatalf("config show: exit %d, want 2", code)
	}
}
