package e2e

// End-to-end tests of submitting through batchhook, and of
// reconciling batches whose notification never came.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

// cpfFile writes n valid CPFs (alternating the two accepted forms), plus
// duplicates in the other form and invalid lines, and returns the path,
// the valid CPFs and the invalid raw values.
func cpfFile(t *testing.T, n int, seed int64) (string, []string, []string) {
	t.Helper()
	valid := lookupsim.SampleCPFs(n, seed)
	dotted := func(c string) string { return c[:3] + "." + c[3:6] + "." + c[6:9] + "-" + c[9:] }
	wrong := func(c string) string { return c[:10] + string('0'+(c[10]-'0'+1)%10) }
	var lines, invalid []string
	for i, c := range valid {
		if i%2 == 0 {
			lines = append(lines, dotted(c))
		} else {
			lines = append(lines, c)
		}
		switch {
		case i%97 == 0: // a duplicate, in the other form
			if i%2 == 0 {
				lines = append(lines, c)
			} else {
				lines = append(lines, dotted(c))
			}
		case i%211 == 5:
			bad := dotted(wrong(c))
			invalid = append(invalid, bad)
			lines = append(lines, bad, "")
		}
	}
	invalid = append(invalid, "222.222.222-22")
	lines = append(lines, "222.222.222-22")
	path := filepath.Join(t.TempDir(), "cpfs.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\r\n")+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, valid, invalid
}

func runCLI(t *testing.T, d *daemonProc, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	return runCLIWith(t, d, "", timeout, args...)
}

// runCLIWith runs the binary with args against the daemon's admin API,
// with the admin token when not empty, and fails the test after timeout.
func runCLIWith(t *testing.T, d *daemonProc, token string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"BATCHHOOK_ADMIN_URL=" + d.admin}
	if token != "" {
		cmd.Env = append(cmd.Env, "BATCHHOOK_ADMIN_TOKEN="+token)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	case <-time.After(timeout):
		cmd.Process.Kill()
		t.Fatalf("batchhook %v still running after %s\nstderr: %s\ndaemon:\n%s", args, timeout, stderr.String(), d.out.String())
		return "", "", 0
	}
}

// TestSubmitWithNotificationsOffExportsEveryBatchByPolling is submission's
// acceptance test at test scale: a file with invalid and duplicate lines,
// submitted through the real binary to a simulator that sends no
// notification and enforces the limits, is exported batch by batch, by
// polling, each batch once, nothing submitted twice and no limit hit.
func TestSubmitWithNotificationsOffExportsEveryBatchByPolling(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{ProcessingDelay: 300 * time.Millisecond, SubmitPerMinute: 10, MaxInFlight: 2,
		Faults: lookupsim.Faults{DropNotifications: true}})
	s.env["BATCHHOOK_MAX_IN_FLIGHT"] = "2"
	s.env["BATCHHOOK_RECONCILE_AFTER"] = "200ms"
	d := startDaemon(t, s.addr, s.env)
	path, valid, invalid := cpfFile(t, 2500, 61)

	stdout, stderr, code := runCLI(t, d, 60*time.Second, "submit", path)
	if code != 0 {
		t.Fatalf("submit exit %d\nstderr: %s\ndaemon:\n%s", code, stderr, d.out.String())
	}
	for _, raw := range invalid {
		if strings.Contains(stderr, raw) || strings.Contains(d.out.String(), raw) {
			t.Fatalf("invalid CPF %s printed unmasked", raw)
		}
	}
	if !strings.Contains(stderr, "***.222.222-**: repeated_digits") || !strings.Contains(stderr, fmt.Sprintf("%d invalid", len(invalid))) {
		t.Fatalf("stderr does not report the invalid lines:\n%s", stderr)
	}
	ids := strings.Fields(stdout)
	if len(ids) != 3 {
		t.Fatalf("printed batch ids %q, want 3 (1000 + 1000 + 500)", ids)
	}
	exported := map[string]bool{}
	var got []string
	for _, id := range ids {
		m := s.waitExport(t, id, d, 30*time.Second)
		if m.Source != "poll" || m.TotalFound != nil || m.CompletedAt != nil {
			t.Fatalf("manifest of %s: source %q, total_found %v, completed_at %v; want poll with nulls", id, m.Source, m.TotalFound, m.CompletedAt)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(s.checkExport(t, id))), "\n") {
			var item struct {
				CPF string `json:"cpf"`
			}
			json.Unmarshal([]byte(line), &item)
			got = append(got, item.CPF)
		}
		exported[id] = true
	}
	if strings.Join(got, ",") != strings.Join(valid, ",") {
		t.Fatalf("exports hold %d CPFs; want the %d valid ones, once each, in file order", len(got), len(valid))
	}
	st := s.sim.Stats()
	if st.Submitted != 3 || st.RateLimited != 0 || st.Deliveries != 0 {
		t.Fatalf("simulator saw %d submissions, %d over a limit, %d deliveries; want 3, 0, 0", st.Submitted, st.RateLimited, st.Deliveries)
	}
	// The reconciler logs batch_reconciled after it queued the batch,
	// and counts it just before: the fetcher may export the batch first.
	waitFor(t, func() bool { return strings.Count(d.out.String(), `"event":"batch_reconciled"`) >= 3 })
	if !strings.Contains(d.out.String(), `"event":"submit_held"`) { // logged before the third chunk was sent
		t.Fatalf("the third chunk never waited for MAX_IN_FLIGHT=2:\n%s", d.out.String())
	}
	_, metrics := get(t, d.admin+"/metrics", "")
	for _, want := range []string{`batchhook_submissions_total{outcome="submitted"} 3`, "batchhook_reconciled_total 3",
		"batchhook_batches_in_flight 0", `batchhook_chunks{state="submitted"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	out, _, code := runCLI(t, d, waitBound, "batches", "show", ids[0], "--json")
	if code != 0 || !strings.Contains(out, `"submission_id"`) || !strings.Contains(out, `"source": "poll"`) {
		t.Fatalf("batches show: %d %s", code, out)
	}
	d.stop(t)
	if n := strings.Count(d.out.String(), `"event":"batch_reconciled"`); n != 3 { // the whole log, the daemon gone
		t.Fatalf("%d batch_reconciled events, want 3", n)
	}
}

// TestNotificationAfterPollIsADuplicate: the poll queued the batch first;
// the provider's late notification changes nothing.
func TestNotificationAfterPollIsADuplicate(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{ProcessingDelay: 100 * time.Millisecond, Faults: lookupsim.Faults{DropNotifications: true}})
	s.env["BATCHHOOK_RECONCILE_AFTER"] = "100ms"
	d := startDaemon(t, s.addr, s.env)
	path, _, _ := cpfFile(t, 5, 3)
	stdout, stderr, code := runCLI(t, d, 30*time.Second, "submit", path)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	id := strings.TrimSpace(stdout)
	s.waitExport(t, id, d, 20*time.Second)
	before, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
	body, ok := s.sim.Notification(id)
	if !ok {
		t.Fatal("simulator has no notification")
	}
	if code, reply := postSigned(t, s.addr, body, 1); code != 200 || reply["result"] != "duplicate" {
		t.Fatalf("late notification: %d %v, want 200 duplicate", code, reply)
	}
	after, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
	if !bytes.Equal(before, after) {
		t.Fatal("the late notification changed the export")
	}
}

// TestNotificationBeforePollQueuesSubmittedBatch: with notifications on, a
// submitted batch is exported from its webhook (accepted, not a
// duplicate) and never polled.
func TestNotificationBeforePollQueuesSubmittedBatch(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_RECONCILE_AFTER"] = "1h"
	d := startDaemon(t, s.addr, s.env)
	path, _, _ := cpfFile(t, 5, 4)
	stdout, stderr, code := runCLI(t, d, 30*time.Second, "submit", "--json", path)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	var sub struct {
		Chunks []struct {
			BatchID string `json:"batch_id"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal([]byte(stdout), &sub); err != nil || len(sub.Chunks) != 1 {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	id := sub.Chunks[0].BatchID
	if m := s.waitExport(t, id, d, 20*time.Second); m.Source != "webhook" {
		t.Fatalf("source %q, want webhook", m.Source)
	}
	waitLogLine(t, d, `"event":"webhook_accepted"`) // logged before the 200, read through a pipe
	if s.sim.Stats().Polls != 0 {
		t.Fatalf("the batch was polled (%d polls)", s.sim.Stats().Polls)
	}
}

// hangingProvider accepts connections and reads requests but never
// answers: a submission sent to it has left batchhook with no answer.
func hangingProvider(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64<<10)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestCrashWhileSendingLeavesSubmitUnknown kills the daemon (SIGKILL) while
// a submission request is in flight: after the restart that chunk is
// submit_unknown, logged and listed, and never sent; the next chunk is.
func TestCrashWhileSendingLeavesSubmitUnknown(t *testing.T) {
	t.Parallel()
	hanging := hangingProvider(t) // bound first: newSetup's free port must not be this one
	s := newSetup(t, lookupsim.Options{})
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	env["BATCHHOOK_API_BASE_URL"] = hanging
	env["BATCHHOOK_FETCH_TIMEOUT"] = "1h"
	d := startDaemon(t, s.addr, env)
	path, _, _ := cpfFile(t, 1500, 5)
	out, stderr, code := runCLI(t, d, 20*time.Second, "submit", "--no-wait", path)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	subID := strings.TrimSpace(out)
	waitUntil(t, waitBound, func() bool {
		o, _, _ := runCLI(t, d, 10*time.Second, "submissions", "show", subID, "--json")
		return strings.Contains(o, `"state": "sending"`)
	}, "chunk 0 never reached sending")
	d.kill()

	d = startDaemon(t, s.addr, s.env) // same data dir, the real provider
	if !strings.Contains(d.out.String(), `"event":"chunk_submit_unknown"`) {
		t.Fatalf("no chunk_submit_unknown at start:\n%s", d.out.String())
	}
	waitUntil(t, waitBound, func() bool { return s.sim.Stats().Submitted == 1 }, "chunk 1 not submitted after the restart")
	o, _, code := runCLI(t, d, 10*time.Second, "submissions", "unknown")
	if code != 0 || !strings.Contains(o, subID) || !strings.Contains(o, "submit_unknown") {
		t.Fatalf("submissions unknown: %d\n%s", code, o)
	}
	time.Sleep(500 * time.Millisecond)
	if n := s.sim.Stats().Submitted; n != 1 {
		t.Fatalf("simulator saw %d submissions, want 1: the unknown chunk must not be sent", n)
	}
	_, metrics := get(t, d.admin+"/metrics", "")
	if !strings.Contains(metrics, `batchhook_chunks{state="submit_unknown"} 1`) {
		t.Fatal("metric batchhook_chunks{state=submit_unknown} is not 1")
	}
	// The operator checked with the provider and decides to send it again.
	if o, e, code := runCLI(t, d, 10*time.Second, "submissions", "resend", subID, "0"); code != 0 {
		t.Fatalf("resend: %d %s %s", code, o, e)
	}
	waitUntil(t, waitBound, func() bool { return s.sim.Stats().Submitted == 2 }, "the resent chunk was not submitted")
	waitLogLine(t, d, `"event":"chunk_resend"`) // logged before the resend's answer, read through a pipe
}

// TestCrashBeforeSendingSubmitsOnce: the daemon dies while a stored chunk
// could not be sent yet (the provider unreachable); after the restart it is
// submitted, once.
func TestCrashBeforeSendingSubmitsOnce(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	env["BATCHHOOK_API_BASE_URL"] = "http://127.0.0.1:1" // nothing listens on port 1: connection refused
	// One refused attempt, then a wait of at least 30 s: the kill below
	// lands while the chunk is back in waiting, never during a retry's
	// sending (a crash there is submit_unknown by design, DECISIONS 18).
	env["BATCHHOOK_BACKOFF_BASE"], env["BATCHHOOK_BACKOFF_MAX"] = "1m", "1h"
	d := startDaemon(t, s.addr, env)
	path, _, _ := cpfFile(t, 10, 6)
	out, stderr, code := runCLI(t, d, 20*time.Second, "submit", "--no-wait", path)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	subID := strings.TrimSpace(out)
	waitUntil(t, waitBound, func() bool { return strings.Contains(d.out.String(), `"event":"chunk_retry"`) }, "no chunk_retry")
	// chunk_retry is logged before the chunk's requeue commits: wait for
	// the store to show it waiting again.
	waitUntil(t, waitBound, func() bool {
		o, _, _ := runCLI(t, d, 10*time.Second, "submissions", "show", subID, "--json")
		return strings.Contains(o, `"state": "waiting"`) && strings.Contains(o, "refused")
	}, "chunk 0 never went back to waiting after the refused attempt")
	d.kill()
	d = startDaemon(t, s.addr, s.env)
	if strings.Contains(d.out.String(), "chunk_submit_unknown") {
		t.Fatal("a chunk that was never sent is marked submit_unknown")
	}
	waitUntil(t, waitBound, func() bool { return s.sim.Stats().Submitted == 1 }, "chunk not submitted after the restart")
	time.Sleep(300 * time.Millisecond)
	if n := s.sim.Stats().Submitted; n != 1 {
		t.Fatalf("%d submissions, want 1", n)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, ok func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(msg)
}

// TestSubmitCSVStrict: --column reads a CSV column, and --strict stores
// nothing when a line is invalid, naming the line, masked.
func TestSubmitCSVStrict(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	good := lookupsim.SampleCPFs(2, 9)
	csv := "name,cpf\n\"Ana\nMaria\",\"" + good[0] + "\"\nJoão,123.456.789-00\nZé," + good[1] + "\n"
	path := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(path, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, d, 20*time.Second, "submit", "--column", "cpf", "--strict", path)
	if code != 1 || !strings.Contains(stderr, "line 4: ***.456.789-**: check_digits") || !strings.Contains(stderr, "strict") {
		t.Fatalf("--strict with an invalid line: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "123.456.789-00") {
		t.Fatal("invalid CPF printed unmasked")
	}
	out, stderr, code := runCLI(t, d, 20*time.Second, "submit", "--column", "CPF", "--no-wait", path)
	if code != 0 || !strings.HasPrefix(out, "s_") || !strings.Contains(stderr, "2 valid CPFs") {
		t.Fatalf("CSV submit: exit %d, out %q\n%s", code, out, stderr)
	}
	waitUntil(t, waitBound, func() bool { return s.sim.Stats().Submitted == 1 }, "the CSV chunk was not submitted")
	if _, stderr, code := runCLI(t, d, 10*time.Second, "submit", "--column", "document", path); code != 1 || !strings.Contains(stderr, "name") {
		t.Fatalf("missing column: exit %d\n%s", code, stderr)
	}
}

// TestTrackAndResubmitThroughTheCLI: a batch submitted elsewhere, whose
// notification is lost, is tracked, polled and exported; its pending CPFs
// are resubmitted once, and a second resubmit is refused.
func TestTrackAndResubmitThroughTheCLI(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{ProcessingDelay: 100 * time.Millisecond, Outcome: lookupsim.Cycle("expired"),
		Faults: lookupsim.Faults{DropNotifications: true}})
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(40, 8))
	if err != nil {
		t.Fatal(err)
	}
	if out, e, code := runCLI(t, d, 10*time.Second, "track", id); code != 0 || !strings.Contains(out, "tracked") {
		t.Fatalf("track: %d %s %s", code, out, e)
	}
	if m := s.waitExport(t, id, d, 20*time.Second); m.Source != "poll" || m.Status != "expired" {
		t.Fatalf("manifest source %q status %q", m.Source, m.Status)
	}
	pending := strings.Count(string(s.checkExport(t, id)), `"result":"pending"`)
	if pending == 0 {
		t.Fatal("the expired batch has no pending item to resubmit")
	}
	// Only an exported batch can be resubmitted, and the store has it
	// exported a moment after its manifest is in place.
	waitExportedLine(t, d, id)
	out, e, code := runCLI(t, d, 10*time.Second, "resubmit", id)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d CPFs of %s", pending, id)) {
		t.Fatalf("resubmit: %d %q %s", code, out, e)
	}
	waitUntil(t, waitBound, func() bool { return s.sim.Stats().Submitted == 2 }, "the pending CPFs were not resubmitted")
	if _, e, code := runCLI(t, d, 10*time.Second, "resubmit", id); code != 1 || !strings.Contains(e, "already resubmitted") {
		t.Fatalf("second resubmit: %d %s", code, e)
	}
}
