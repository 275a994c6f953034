package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// TestServeEnvFile: serve --env-file takes the secrets and settings from
// the file, and a variable the environment also sets takes the
// environment's value: the file's webhook path would leave every delivery
// 404, so an export proves the environment's path won.
func TestServeEnvFile(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	file := filepath.Join(t.TempDir(), "batchhook.env")
	content := strings.Join([]string{
		"# secrets and settings for the e2e test",
		`BATCHHOOK_SIGNING_SECRET="` + e2eSecret + `"`, // the trailing blank is part of the secret
		"BATCHHOOK_API_KEY='" + e2eKey + "'",
		"BATCHHOOK_API_BASE_URL=" + s.env["BATCHHOOK_API_BASE_URL"],
		"BATCHHOOK_DATA_DIR=" + s.env["BATCHHOOK_DATA_DIR"],
		"; the environment overrides this one",
		"BATCHHOOK_WEBHOOK_PATH=/webhooks/from-the-file",
		"",
	}, "\n")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startBinary(t, binary, s.addr, map[string]string{"BATCHHOOK_WEBHOOK_PATH": e2ePath}, "--env-file", file)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(20, 3))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, id, d, waitBound)
	s.checkExport(t, id)
	if strings.Contains(d.out.String(), "from-the-file") {
		t.Fatalf("the file's webhook path is in use:\n%s", d.out.String())
	}
	d.stop(t)

	// A line that is not an assignment stops the start, naming the file and line.
	if err := os.WriteFile(file, []byte(content+"not an assignment\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := runServe(t, []string{binary, "serve", "--env-file", file}, nil)
	if code != 2 {
		t.Fatalf("a bad env file: exit %d, want 2; stderr %s", code, stderr)
	}
	stderrLine(t, stderr, file+", line 8:", "not a NAME=VALUE assignment")
}
