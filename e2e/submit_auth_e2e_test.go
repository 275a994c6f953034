package e2e

// submit says so when the provider refuses the API key, and what to do.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/lookupsim"
)

// TestSubmitShowsARefusedAPIKey: a daemon whose API key the simulator
// refuses (401) makes `batchhook submit` print, without a terminal, a line
// naming the variable to fix; the admin API's waiting says auth with a
// hint and no estimate in the past; `submissions list` shows the reason.
// submit then stops waiting (exit 1: no retry mends a refused key, and a
// script must not hang); once the key file is fixed and SIGHUP sent, the
// daemon submits the chunk. The wrong key never shows.
func TestSubmitShowsARefusedAPIKey(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	const wrongKey = "wrong-key-e2e-0451"
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte(wrongKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	delete(s.env, "BATCHHOOK_API_KEY")
	s.env["BATCHHOOK_API_KEY_FILE"] = keyFile
	d := startDaemon(t, s.addr, s.env)
	path := filepath.Join(t.TempDir(), "cpfs.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lookupsim.SampleCPFs(3, 7), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "submit", "--poll", "100ms", path)
	cmd.Env = []string{"BATCHHOOK_ADMIN_URL=" + d.admin}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var all strings.Builder
	var subID, reasonLine string
	deadline := time.After(waitBound)
	for reasonLine == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("submit ended before it said why it waits:\n%s", all.String())
			}
			all.WriteString(l + "\n")
			if id, ok := strings.CutPrefix(l, "submission "); ok {
				subID, _, _ = strings.Cut(id, ":")
			}
			if strings.Contains(l, "BATCHHOOK_API_KEY") {
				reasonLine = l
			}
		case <-deadline:
			t.Fatalf("submit did not name BATCHHOOK_API_KEY within %s:\n%s\ndaemon:\n%s", waitBound, all.String(), d.out.String())
		}
	}
	for _, want := range []string{"refused the API key", "SIGHUP"} {
		if !strings.Contains(reasonLine, want) {
			t.Errorf("reason line %q lacks %q", reasonLine, want)
		}
	}

	resp, err := http.Get(d.admin + "/admin/submissions/" + subID)
	if err != nil {
		t.Fatal(err)
	}
	var sub admin.SubmissionView
	err = json.NewDecoder(resp.Body).Decode(&sub)
	resp.Body.Close()
	if err != nil || sub.Waiting == nil {
		t.Fatalf("submission %s: %v, waiting %+v", subID, err, sub.Waiting)
	}
	w := sub.Waiting
	if w.ErrorKind != "auth" || !strings.Contains(w.Hint, "BATCHHOOK_API_KEY_FILE") || w.LastError == "" {
		t.Errorf("waiting %+v, want error_kind auth, the last error and a hint naming BATCHHOOK_API_KEY_FILE", w)
	}
	if w.EstimatedDoneAt != nil || w.Estimate != "unknown" {
		t.Errorf("waiting on a refused key: estimated_done_at %v, estimate %q; want none, \"unknown\"", w.EstimatedDoneAt, w.Estimate)
	}

	list := exec.CommandContext(ctx, binary, "submissions", "list")
	list.Env = cmd.Env
	out, err := list.CombinedOutput()
	if err != nil || !regexpLine(string(out), `^`+subID+`\s.*\s0/1\s.*refused the API key`) {
		t.Errorf("submissions list: %v, want %s with 0/1 and the reason\n%s", err, subID, out)
	}

	// submit gives up waiting by itself, naming the fix and the way back.
	for l := range lines {
		all.WriteString(l + "\n")
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(all.String(), "stopped waiting") ||
		!strings.Contains(all.String(), "batchhook submissions show "+subID) {
		t.Fatalf("submit on a refused key: %v, want exit 1 saying it stopped waiting and how to follow the submission:\n%s", err, all.String())
	}

	// The hint's advice works: fix the file, SIGHUP, and the daemon
	// submits the chunk it kept.
	if err := os.WriteFile(keyFile, []byte(e2eKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	submitted := func() bool {
		resp, err := http.Get(d.admin + "/admin/submissions/" + subID)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var sub admin.SubmissionView
		return json.NewDecoder(resp.Body).Decode(&sub) == nil && len(sub.Chunks) == 1 && sub.Chunks[0].State == "submitted" &&
			strings.HasPrefix(sub.Chunks[0].BatchID, "b_")
	}
	waitFor(t, submitted)
	if strings.Contains(all.String()+stdout.String()+string(out), wrongKey) {
		t.Errorf("the API key reached the CLI's output:\n%s", all.String())
	}
}
