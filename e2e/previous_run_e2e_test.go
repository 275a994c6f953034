package e2e

// A failed commit ends the process within milliseconds, and a kill ends it
// at once: neither leaves a scrape or a readiness probe the time to see it.
// What survives the restart is the next start's report of how the previous
// run ended: the previous_run_failed log line and the
// batchhook_previous_run_failed gauge.

import (
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

// previousRunLines returns the previous_run_failed lines of a daemon's log.
func previousRunLines(t *testing.T, d *daemonProc) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(d.out.String(), "\n") {
		if !strings.Contains(l, `"previous_run_failed"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["event"] == "previous_run_failed" {
			out = append(out, m)
		}
	}
	return out
}

// previousRunGauge scrapes batchhook_previous_run_failed.
func previousRunGauge(t *testing.T, d *daemonProc) string {
	t.Helper()
	code, body := get(t, d.admin+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^batchhook_previous_run_failed (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no batchhook_previous_run_failed:\n%s", grepLines(body, "batchhook_previous"))
	}
	return m[1]
}

// checkReported asserts one previous_run_failed line whose reason contains
// reason and whose when lies in [from, to], and the gauge at 1.
func checkReported(t *testing.T, d *daemonProc, reason string, from, to time.Time) {
	t.Helper()
	lines := previousRunLines(t, d)
	if len(lines) != 1 {
		t.Fatalf("%d previous_run_failed lines, want 1:\n%s", len(lines), d.out.String())
	}
	l := lines[0]
	got, _ := l["reason"].(string)
	when, err := time.Parse(time.RFC3339Nano, l["when"].(string))
	if !strings.Contains(got, reason) || err != nil || l["level"] != "warn" {
		t.Fatalf("previous_run_failed %v: want level warn, a reason containing %q and a when", l, reason)
	}
	// The marker keeps milliseconds: allow for the rounding.
	if when.Before(from.Add(-time.Millisecond)) || when.After(to.Add(time.Millisecond)) {
		t.Fatalf("previous_run_failed when %s, want between %s and %s", when, from, to)
	}
	if g := previousRunGauge(t, d); g != "1" {
		t.Fatalf("batchhook_previous_run_failed = %s after %s, want 1", g, reason)
	}
	t.Logf("reported: %v", l)
}

// checkClean asserts no previous_run_failed line and the gauge at 0.
func checkClean(t *testing.T, d *daemonProc, after string) {
	t.Helper()
	if lines := previousRunLines(t, d); len(lines) != 0 {
		t.Fatalf("previous_run_failed logged after %s: %v", after, lines)
	}
	if g := previousRunGauge(t, d); g != "0" {
		t.Fatalf("batchhook_previous_run_failed = %s after %s, want 0", g, after)
	}
}

// TestPreviousRunFailedAfterAKill: a first start and a start after a clean
// stop report nothing (gauge 0); a start after a SIGKILL reports an
// unclean exit, when the killed run started (gauge 1); the next clean stop
// and start are quiet again.
func TestPreviousRunFailedAfterAKill(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_FETCH_WORKERS"] = "0"
	d := startDaemon(t, s.addr, s.env)
	checkClean(t, d, "a first start")
	d.stop(t)

	before := time.Now()
	d = startDaemon(t, s.addr, s.env)
	started := time.Now()
	checkClean(t, d, "a clean stop")
	d.kill()

	d = startDaemon(t, s.addr, s.env)
	checkReported(t, d, "unclean exit (killed or crashed)", before, started)
	d.stop(t)

	d = startDaemon(t, s.addr, s.env)
	checkClean(t, d, "a clean stop that followed a kill")
	d.stop(t)
}

// TestPreviousRunFailedAfterAFailedCommit: every write to the database
// fails with ENOSPC (strace, as in TestDiskFullFailsClosedAndRestarts);
// the daemon exits non-zero, and its next start names the failed commit
// and the full disk, when it failed (gauge 1).
func TestPreviousRunFailedAfterAFailedCommit(t *testing.T) {
	t.Parallel()
	s, d := quietSetup(t)
	tr := attachStrace(t, d.cmd.Process.Pid, "pwrite64:error=ENOSPC")
	before := time.Now()
	if r := deliver(s.addr, completedBody("b_previous_run"), 1); r.err != nil || r.code != 503 {
		t.Fatalf("delivery on a full disk: %+v, want 503", r)
	}
	select {
	case err := <-d.done:
		d.done <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("daemon exit after a failed commit: %v, want non-zero", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon still running 20s after a failed commit:\n%s", d.out.String())
	}
	exited := time.Now()
	tr.detach()

	d = startDaemon(t, s.addr, s.env)
	checkReported(t, d, "failed commit", before, exited)
	if l := previousRunLines(t, d)[0]; !strings.Contains(l["reason"].(string), "no space left on device") {
		t.Fatalf("previous_run_failed reason %q does not name the full disk", l["reason"])
	}
	d.stop(t)
	d = startDaemon(t, s.addr, s.env)
	checkClean(t, d, "a clean stop that followed a failed commit")
	d.stop(t)
}
