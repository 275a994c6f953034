package e2e

// batchhook fingerprint prints what the daemon logs.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The expected fingerprints were computed by openssl, independently:
//
//	printf 'fp-s3cret' | openssl dgst -sha256   → 8fac76d8…
//	printf 'api key '  | openssl dgst -sha256   → b65c1731…
const (
	fpSecret     = "fp-s3cret"
	fpSecretHash = "8fac76d8"
	fpKey        = "api key "
	fpKeyHash    = "b65c1731"
)

func TestFingerprintCommandPrintsWhatTheDaemonLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "signing-secret")
	if err := os.WriteFile(file, []byte(fpSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newSetupForConfig(t)
	delete(env, "BATCHHOOK_SIGNING_SECRET")
	env["BATCHHOOK_SIGNING_SECRET_FILE"] = file
	env["BATCHHOOK_API_KEY"] = fpKey
	d := startDaemon(t, freePort(t), env)
	d.stop(t)
	var logged map[string]any
	var spaceWarn map[string]any
	for _, ev := range logEvents(t, d.out.String()) {
		switch ev["event"] {
		case "started":
			logged = ev
		case "secret_whitespace":
			spaceWarn = ev
		}
	}
	if logged == nil || logged["signing_secret_fingerprint"] != fpSecretHash || logged["api_key_fingerprint"] != fpKeyHash {
		t.Fatalf("started line %v, want the fingerprints openssl gives", logged)
	}
	if spaceWarn == nil || spaceWarn["variable"] != "BATCHHOOK_API_KEY" {
		t.Fatalf("secret_whitespace line %v, want one for BATCHHOOK_API_KEY (it ends with a blank)", spaceWarn)
	}

	out, stderr, code := runBinary(t, "fingerprint", "--secret-file", file)
	if code != 0 || out != fpSecretHash+"\n" {
		t.Fatalf("fingerprint --secret-file: exit %d, stdout %q, stderr %q; want %s", code, out, stderr, fpSecretHash)
	}
	cmd := exec.Command(binary, "fingerprint", "--secret-env", "MY_KEY")
	cmd.Env = []string{"MY_KEY=" + fpKey}
	var sout, serr strings.Builder
	cmd.Stdout, cmd.Stderr = &sout, &serr
	if err := cmd.Run(); err != nil || sout.String() != fpKeyHash+"\n" || !strings.Contains(serr.String(), "ends with whitespace") {
		t.Fatalf("fingerprint --secret-env: %v, stdout %q, stderr %q; want %s and a note on the blank", err, sout.String(), serr.String(), fpKeyHash)
	}
	for _, args := range [][]string{{"fingerprint"}, {"fingerprint", "--secret-file", file, "--secret-env", "X"}} {
		if _, _, code := runBinary(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
