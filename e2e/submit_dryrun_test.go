package e2e

// submit --dry-run, and the plurals of submit.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

func TestSubmitDryRunValidatesAndSplitsWithoutADaemon(t *testing.T) {
	t.Parallel()
	path, valid, invalid := cpfFile(t, 2345, 7)
	// No daemon: an admin URL nobody listens on would fail any request.
	env := map[string]string{"BATCHHOOK_ADMIN_URL": "http://127.0.0.1:1"}
	out, stderr, code := runWithEnv(t, env, "submit", "--dry-run", path)
	if code != 0 {
		t.Fatalf("submit --dry-run: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("%d valid CPFs", len(valid)),
		fmt.Sprintf("%d invalid", len(invalid)),
		"batch 1: 1000 CPFs\nbatch 2: 1000 CPFs\nbatch 3: 345 CPFs\n",
		"would submit 3 batches; nothing was sent",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(stderr, "\n") != len(invalid) || !strings.Contains(stderr, "line ") {
		t.Errorf("stderr should list the %d invalid lines, masked:\n%s", len(invalid), stderr)
	}
	for _, c := range valid[:20] {
		if strings.Contains(out+stderr, c) {
			t.Fatalf("the dry run printed a CPF")
		}
	}

	out, _, code = runWithEnv(t, env, "submit", "--dry-run", "--json", path)
	var r struct {
		Valid   int   `json:"valid"`
		Batches []int `json:"batches"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Valid != len(valid) || fmt.Sprint(r.Batches) != "[1000 1000 345]" {
		t.Fatalf("--json: exit %d %v %+v\n%s", code, err, r, out)
	}
	if _, stderr, code := runWithEnv(t, env, "submit", "--dry-run", "--strict", path); code != 1 || !strings.Contains(stderr, "nothing would be submitted") {
		t.Fatalf("--strict with invalid lines: exit %d\n%s", code, stderr)
	}
}

func TestSubmitDryRunSaysOneCPFInTheSingular(t *testing.T) {
	t.Parallel()
	one := filepath.Join(t.TempDir(), "one.txt")
	if err := os.WriteFile(one, []byte(lookupsim.SampleCPFs(1, 3)[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runWithEnv(t, nil, "submit", "--dry-run", one)
	if code != 0 || !strings.Contains(out, "1 line: 1 valid CPF, 0 duplicates dropped, 0 invalid") ||
		!strings.Contains(out, "batch 1: 1 CPF\n") || !strings.Contains(out, "would submit 1 batch;") {
		t.Fatalf("exit %d, output:\n%s%s", code, out, stderr)
	}
}

func TestMissingFileAndUnknownSubcommandsAreUsageErrors(t *testing.T) {
	t.Parallel()
	if _, stderr, code := runWithEnv(t, nil, "submit", "--dry-run"); code != 2 || !strings.Contains(stderr, "Usage") {
		t.Errorf("submit without FILE: exit %d, want 2 with the usage:\n%s", code, stderr)
	}
	for _, cmd := range []string{"batches", "quarantine", "payments", "deliveries", "sandbox", "submissions", "erasures", "config"} {
		if _, stderr, code := runWithEnv(t, nil, cmd, "no-such-subcommand"); code != 2 || !strings.Contains(stderr, "Usage") {
			t.Errorf("%s no-such-subcommand: exit %d, want 2 with the usage:\n%s", cmd, code, stderr)
		}
	}
	if _, stderr, code := runWithEnv(t, nil, "no-such-command"); code != 2 || !strings.Contains(stderr, "Usage") {
		t.Errorf("an unknown command: exit %d, want 2 with the usage:\n%s", code, stderr)
	}
}
