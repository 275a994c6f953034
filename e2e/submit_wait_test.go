package e2e

// submit says why it waits and when it should end.

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/lookupsim"
)

func TestSubmitSaysWhyItWaitsAndWhenItEnds(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_SUBMIT_PER_MINUTE"] = "1"
	d := startDaemon(t, s.addr, s.env)
	path := filepath.Join(t.TempDir(), "cpfs.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lookupsim.SampleCPFs(2001, 5), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "submit", path)
	cmd.Env = []string{"BATCHHOOK_ADMIN_URL=" + d.admin}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go io.Copy(io.Discard, stdout)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var subID, waitLine string
	deadline := time.After(30 * time.Second)
	for waitLine == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("submit ended before it waited")
			}
			if id, ok := strings.CutPrefix(l, "submission "); ok {
				subID, _, _ = strings.Cut(id, ":")
			}
			if strings.HasPrefix(l, "waiting:") {
				waitLine = l
			}
		case <-deadline:
			t.Fatal("submit printed no waiting line in 30 s")
		}
	}
	for _, want := range []string{"the provider's rate limit (1 submission a minute)", "next at ", "2 batches queued, the last about "} {
		if !strings.Contains(waitLine, want) {
			t.Errorf("waiting line %q lacks %q", waitLine, want)
		}
	}
	resp, err := http.Get(d.admin + "/admin/submissions/" + subID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sub admin.SubmissionView
	if err := json.NewDecoder(resp.Body).Decode(&sub); err != nil || sub.Waiting == nil {
		t.Fatalf("submission %s: %v, waiting %+v", subID, err, sub.Waiting)
	}
	w := sub.Waiting
	if w.Reason != "rate_limit" || w.Until.IsZero() || w.EstimatedDoneAt == nil || w.QueuedChunks != 2 ||
		w.EstimatedDoneAt.Sub(w.Until) != time.Minute {
		t.Fatalf("waiting %+v, want rate_limit with the last of 2 queued chunks a minute after the next", w)
	}
}
