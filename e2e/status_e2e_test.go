package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
)

// batchhook status through the real binary: its exit codes (DECISIONS 36)
// on a daemon that is not there (3), a healthy fresh one (0, naming its
// listeners and data directory), one that has seen a webhook posted to a
// wrong path or refused one with 401 (1, with the warning that says so), a
// bad flag (2), and --json that parses.
func TestStatusExitCodesThroughTheBinary(t *testing.T) {
	t.Parallel()
	nowhere := "http://" + freePort(t)
	if _, errOut, code := runBinary(t, "status", "--admin", nowhere); code != 3 || !strings.Contains(errOut, "connection refused") {
		t.Fatalf("status with nothing listening: exit %d %q, want 3", code, errOut)
	}

	env := newSetupForConfig(t)
	dataDir, err := filepath.Abs(env["BATCHHOOK_DATA_DIR"])
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, freePort(t), env)
	out, errOut, code := runCLI(t, d, waitBound, "status")
	if code != 0 || !regexpLine(out, `^ready\s+yes$`) || !regexpLine(out, `^last batch webhook\s+none since start$`) || !strings.Contains(out, "no warnings") ||
		!regexpLine(out, `^data dir\s+`+regexp.QuoteMeta(dataDir)+`$`) || !regexpLine(out, `^webhook listener\s+`+regexp.QuoteMeta(d.addr)+`$`) ||
		!regexpLine(out, `^admin listener\s+`+regexp.QuoteMeta(strings.TrimPrefix(d.admin, "http://"))+`$`) ||
		!regexpLine(out, `^refused \(401\)\s+0 since start$`) || !regexpLine(out, `^sinks\s+file only \(exports on disk; no delivery queue\)$`) {
		t.Fatalf("status of a fresh daemon: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, d, waitBound, "status", "--json")
	var v struct {
		Ready        bool              `json:"ready"`
		Warnings     []string          `json:"warnings"`
		Build        map[string]string `json:"build"`
		ListenAddr   string            `json:"listen_addr"`
		DataDir      string            `json:"data_dir"`
		LastAccepted map[string]struct {
			At         *time.Time `json:"at"`
			AgeSeconds *int64     `json:"age_seconds"`
		} `json:"last_accepted"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || !v.Ready || v.Warnings == nil || len(v.Warnings) != 0 ||
		v.Build["go"] == "" || len(v.LastAccepted) != 1 || v.LastAccepted["batch"].At != nil || v.LastAccepted["batch"].AgeSeconds != nil ||
		v.ListenAddr != d.addr || v.DataDir != dataDir {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}

	resp, err := http.Post("http://"+d.addr+"/webhooks/batch-complete", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The request is counted once its reply is written: wait for the count.
	waitFor(t, func() bool {
		out, errOut, code = runCLI(t, d, waitBound, "status")
		return regexpLine(out, `^unknown paths\s+1 request since start, last \d+s ago$`)
	})
	if code != 1 || !regexpLine(out, `^  - 1 request to unknown paths on the webhook listener since start, the last \d+s ago: is the provider's webhook URL right\?`) {
		t.Fatalf("status after a wrong path: exit %d, want 1 with the warning\n%s%s", code, out, errOut)
	}

	// A delivery signed with another secret than the daemon's: the first
	// deploy's likeliest mistake, which status must not call healthy.
	body := []byte(`{"event":"batch.completed","batch_id":"b_1"}`)
	req, err := http.NewRequest(http.MethodPost, "http://"+d.addr+"/webhooks/batch-completed", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte("not the daemon's secret"), body))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret: %s, want 401", resp.Status)
	}
	waitFor(t, func() bool {
		out, errOut, code = runCLI(t, d, waitBound, "status")
		return regexpLine(out, `^refused \(401\)\s+1 since start, last \d+s ago$`)
	})
	if code != 1 || !regexpLine(out, `^  - 1 webhook refused with 401 \(bad signature\) since start, the last \d+s ago: `+
		`the provider may sign with another secret than BATCHHOOK_SIGNING_SECRET\[_FILE\]; batchhook rejected list`) {
		t.Fatalf("status after a 401: exit %d, want 1 with the warning\n%s%s", code, out, errOut)
	}

	if _, errOut, code := runCLI(t, d, waitBound, "status", "--no-such-flag"); code != 2 || !strings.Contains(errOut, "Usage: batchhook status") {
		t.Fatalf("status with a bad flag: exit %d %q, want 2 with the usage", code, errOut)
	}
}

// healthcheck --wait started before the daemon: it says it waits, then
// exits 0 once the daemon serves on the address it asks.
func TestHealthcheckWaitSeesTheDaemonStart(t *testing.T) {
	t.Parallel()
	adminAddr := freePort(t)
	wait := exec.Command(binary, "healthcheck", "--wait", "2m", "--admin", "http://"+adminAddr)
	wait.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errOut testutil.SyncBuffer
	wait.Stdout, wait.Stderr = &out, &errOut
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait.Wait() }()
	t.Cleanup(func() {
		if wait.ProcessState == nil {
			_ = wait.Process.Kill()
			<-done
		}
	})
	waitFor(t, func() bool { return strings.Contains(errOut.String(), "(now: connection refused)") })
	select {
	case err := <-done:
		t.Fatalf("healthcheck --wait ended before the daemon started: %v\n%s", err, errOut.String())
	default:
	}

	env := newSetupForConfig(t)
	env["BATCHHOOK_ADMIN_ADDR"] = adminAddr
	d := startDaemon(t, freePort(t), env)
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "200 OK") {
			t.Fatalf("healthcheck --wait: %v\nstdout %q\nstderr %q\ndaemon:\n%s", err, out.String(), errOut.String(), d.out.String())
		}
	case <-time.After(waitBound):
		t.Fatalf("healthcheck --wait still waiting %s after the daemon started\n%s", waitBound, errOut.String())
	}
}

// healthcheck --wait with nothing to wait for: exit 1 after the time
// given, naming what it saw.
func TestHealthcheckWaitTimesOut(t *testing.T) {
	t.Parallel()
	nowhere := "http://" + freePort(t)
	start := time.Now()
	_, errOut, code := runBinary(t, "healthcheck", "--wait", "1s", "--admin", nowhere)
	if code != 1 || !strings.Contains(errOut, nowhere+"/healthz did not answer 200 within 1s; last: connection refused") {
		t.Fatalf("healthcheck --wait 1s on nothing: exit %d %q", code, errOut)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("gave up after %s, before the 1s it was given", took)
	}
}
