package e2e

// End-to-end tests: the real batchhook binary, built once in TestMain,
// against the provider simulator on loopback.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
)

var binary string

// defaultParallel is how many end-to-end tests run at once unless
// -test.parallel says otherwise. Most of their time is spent waiting on the
// daemons, simulators and sinks they start, not on the CPU, so more of
// them than there are cores keep a small machine busy. The few that judge
// latency or memory (slow disks, slow bodies, the second signal) do not
// call t.Parallel: they run first, alone.
const defaultParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	if !flagSet("test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(max(defaultParallel, runtime.GOMAXPROCS(0)))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	dir, err := os.MkdirTemp("", "batchhook-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	raced := filepath.Join(dir, "race", "batchhook")
	build := exec.Command("go", "build", "-race", "-o", raced, "../cmd/batchhook")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build batchhook:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "batchhook")
	if err := writeRaceLauncher(binary, raced); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// writeRaceLauncher writes at path a script that execs the race-enabled
// binary real with atexit_sleep_ms=0. The race runtime otherwise sleeps a
// second at every exit so that late reports can print; the end-to-end tests
// run the binary hundreds of times, most of them with an environment they
// build from scratch, so that second was most of the suite's time. exec
// keeps the process id, so signals the tests send reach the binary itself.
// Race reports still print: the runtime reports a race when it sees it.
func writeRaceLauncher(path, real string) error {
	quoted := "'" + strings.ReplaceAll(real, "'", `'\''`) + "'"
	script := "#!/bin/sh\nGORACE=\"atexit_sleep_ms=0 ${GORACE:-}\" exec " + quoted + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write race launcher: %w", err)
	}
	return nil
}

const (
	e2eSecret = "whsec e2e secret "
	e2eKey    = "key-e2e"
	e2ePath   = "/webhooks/batch-completed"
)

// daemonProc is one running batchhook serve.
type daemonProc struct {
	cmd   *exec.Cmd
	out   *testutil.SyncBuffer
	addr  string
	admin string // http://host:port of the admin listener
	done  chan error
}

// startDaemon runs the binary with env on addr and waits until it serves.
func startDaemon(t *testing.T, addr string, env map[string]string) *daemonProc {
	t.Helper()
	return startBinary(t, binary, addr, env)
}

// startBinary is startDaemon for another build of the binary; args
// follow "serve".
func startBinary(t *testing.T, bin, addr string, env map[string]string, args ...string) *daemonProc {
	t.Helper()
	return startCommand(t, addr, env, append([]string{bin, "serve"}, args...))
}

// startCommand is startBinary for a command line of its own (argv[0] the
// program): the binary under a tracer, for one.
func startCommand(t *testing.T, addr string, env map[string]string, argv []string) *daemonProc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BATCHHOOK_LISTEN_ADDR=" + addr, "BATCHHOOK_ADMIN_ADDR=127.0.0.1:0"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{cmd: cmd, out: out, addr: addr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) {
		if strings.Contains(out.String(), `"event":"started"`) {
			m := regexp.MustCompile(`"admin_addr":"([^"]+)"`).FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("start line has no admin_addr:\n%s", out.String())
			}
			p.admin = "http://" + m[1]
			return p
		}
		select {
		case err := <-p.done:
			t.Fatalf("batchhook exited at start: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("batchhook did not start:\n%s", out.String())
	return nil
}

func (p *daemonProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	}
}

func (p *daemonProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("batchhook did not stop cleanly: %v\n%s", err, p.out.String())
		}
	case <-time.After(2 * waitBound): // the daemon's own stop may take 2×ShutdownTimeout
		t.Fatalf("batchhook did not stop on SIGTERM")
	}
}

type setup struct {
	sim     *lookupsim.Server
	env     map[string]string
	addr    string
	exports string
}

// newSetup starts a simulator that delivers to a daemon address chosen here.
func newSetup(t *testing.T, opts lookupsim.Options) *setup {
	t.Helper()
	addr := freePort(t)
	opts.APIKey, opts.SigningSecret = e2eKey, []byte(e2eSecret)
	opts.WebhookURL = "http://" + addr + e2ePath
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 50 * time.Millisecond
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 100 * time.Millisecond
	}
	sim, err := lookupsim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close(context.Background()) })
	data := t.TempDir()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(e2eSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &setup{sim: sim, addr: addr, exports: filepath.Join(data, "exports"), env: map[string]string{
		"BATCHHOOK_SIGNING_SECRET_FILE": secretFile,
		"BATCHHOOK_API_KEY":             e2eKey,
		"BATCHHOOK_API_BASE_URL":        sim.URL(),
		"BATCHHOOK_DATA_DIR":            data,
		"BATCHHOOK_PAGE_LIMIT":          "40",
		"BATCHHOOK_BACKOFF_BASE":        "50ms",
		"BATCHHOOK_BACKOFF_MAX":         "2s",
		"BATCHHOOK_LOG_LEVEL":           "debug",
	}}
}

// waitExport waits for the published manifest of id.
func (s *setup) waitExport(t *testing.T, id string, d *daemonProc, timeout time.Duration) export.Manifest {
	t.Helper()
	deadline := time.Now().Add(timeout)
	path := filepath.Join(s.exports, id, export.ManifestFile)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil {
			var m export.Manifest
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("manifest of %s: %v", id, err)
			}
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := ""
	if d != nil {
		out = d.out.String()
	}
	t.Fatalf("batch %s not exported within %s\n%s", id, timeout, out)
	return export.Manifest{}
}

// demo.CheckExport compares an export with what the simulator served, byte for byte.
func (s *setup) checkExport(t *testing.T, id string) []byte {
	t.Helper()
	dir := filepath.Join(s.exports, id)
	items, ok := s.sim.Results(id)
	if !ok {
		t.Fatalf("simulator has no results for %s", id)
	}
	var want bytes.Buffer
	for _, it := range items {
		want.Write(it)
		want.WriteByte('\n')
	}
	got, err := os.ReadFile(filepath.Join(dir, export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		gl, wl := bytes.Count(got, []byte("\n")), bytes.Count(want.Bytes(), []byte("\n"))
		t.Fatalf("export of %s differs from the simulator's items (%d lines, want %d)", id, gl, wl)
	}
	for _, name := range []string{export.ResultsFile, export.ManifestFile} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s/%s mode %v (%v), want 0600", id, name, st.Mode().Perm(), err)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s mode %v, want 0700", dir, st.Mode().Perm())
	}
	return got
}

func postSigned(t *testing.T, addr string, body []byte, attempt int) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(e2eSecret), body))
	req.Header.Set("X-Service-Attempt", fmt.Sprint(attempt))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func TestServeExportsEveryOutcomeAndReplayIsANoOp(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{Outcome: lookupsim.Cycle("completed", "partial", "expired", "failed")})
	d := startDaemon(t, s.addr, s.env)
	ids := make([]string, 4)
	for i := range ids {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(90+i, int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for i, id := range ids {
		m := s.waitExport(t, id, d, 20*time.Second)
		results := s.checkExport(t, id)
		var note map[string]any
		raw, _ := s.sim.Notification(id)
		if err := json.Unmarshal(raw, &note); err != nil {
			t.Fatal(err)
		}
		if m.BatchID != id || m.Status != note["status"] || m.Source != "webhook" ||
			m.TotalRequested == nil || float64(*m.TotalRequested) != note["total_requested"] ||
			float64(*m.TotalFound) != note["total_found"] || float64(*m.TotalNotFound) != note["total_not_found"] {
			t.Fatalf("batch %d manifest %+v does not match notification %v", i, m, note)
		}
		if m.Items != int64(bytes.Count(results, []byte("\n"))) || m.CompletedAt == nil {
			t.Fatalf("manifest items %d / completed_at %v", m.Items, m.CompletedAt)
		}
		if m.Status == "failed" && len(results) != 0 {
			t.Fatalf("failed batch exported %d bytes", len(results))
		}
	}
	// A replay of a genuine delivery is acknowledged and changes nothing.
	pages := s.sim.Stats().PagesServed
	raw, _ := s.sim.Notification(ids[0])
	before, _ := os.Stat(filepath.Join(s.exports, ids[0], export.ManifestFile))
	code, reply := postSigned(t, s.addr, raw, 9)
	if code != 200 || reply["result"] != "duplicate" {
		t.Fatalf("replay: %d %v", code, reply)
	}
	time.Sleep(300 * time.Millisecond) // give a wrongly woken worker time to act
	// Then stop: what such a worker did up to the stop counts too, and the
	// log is whole once the daemon has exited.
	d.stop(t)
	after, _ := os.Stat(filepath.Join(s.exports, ids[0], export.ManifestFile))
	if s.sim.Stats().PagesServed != pages || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("a replay caused a refetch or rewrote the export")
	}
	if entries, _ := os.ReadDir(filepath.Join(s.exports, ".partial")); len(entries) != 0 {
		t.Fatalf(".partial not empty: %v", entries)
	}
	logs := d.out.String()
	sum := sha256.Sum256([]byte(e2eSecret)) // the file's final newline is not part of the secret
	if fp := hex.EncodeToString(sum[:4]); !strings.Contains(logs, `"signing_secret_fingerprint":"`+fp+`"`) {
		t.Fatalf("start log lacks the secret's fingerprint %s", fp)
	}
	for _, leak := range []string{e2eSecret, e2eKey, `"cpf"`, lookupsim.SampleCPFs(90, 0)[0]} {
		if strings.Contains(logs, leak) {
			t.Fatalf("logs contain %q", leak)
		}
	}
}

func TestKilledBetweenPagesResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{Faults: lookupsim.Faults{SlowPage: 60 * time.Millisecond}})
	s.env["BATCHHOOK_PAGE_LIMIT"] = "25"
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(1000, 7))
	if err != nil {
		t.Fatal(err)
	}
	const pages = 40
	deadline := time.Now().Add(20 * time.Second)
	for s.sim.Stats().PagesServed < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("fetch did not start:\n%s", d.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	d.done <- nil
	if _, err := os.Stat(filepath.Join(s.exports, id)); err == nil {
		t.Fatal("export published before the kill; the test proves nothing")
	}
	d2 := startDaemon(t, s.addr, s.env)
	s.waitExport(t, id, d2, 30*time.Second)
	s.checkExport(t, id)
	// Resumed, not restarted: at most the page in flight at the kill is fetched twice.
	if served := s.sim.Stats().PagesServed; served > pages+2 {
		t.Fatalf("%d pages served for a %d-page batch: the restart did not resume from the checkpoint", served, pages)
	}
	if !strings.Contains(d2.out.String(), `"event":"leases_released"`) {
		t.Fatalf("restart did not release the killed worker's lease:\n%s", d2.out.String())
	}
	d2.stop(t)
}

func TestFetchAbsorbsEachProviderFault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		faults lookupsim.Faults
	}{
		{"500s", lookupsim.Faults{FailGETs: 3, FailStatus: 500}},
		{"429 with Retry-After", lookupsim.Faults{FailGETs: 2, FailStatus: 429, RetryAfter: time.Second}},
		{"dropped connections", lookupsim.Faults{DropGETs: 3}},
		{"slow pages", lookupsim.Faults{SlowPage: 30 * time.Millisecond}},
		{"duplicate deliveries", lookupsim.Faults{DuplicateDeliveries: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, lookupsim.Options{Faults: c.faults})
			d := startDaemon(t, s.addr, s.env)
			id, err := s.sim.Submit(lookupsim.SampleCPFs(130, 3))
			if err != nil {
				t.Fatal(err)
			}
			s.waitExport(t, id, d, 20*time.Second)
			s.checkExport(t, id)
			st := s.sim.Stats()
			if c.faults.FailGETs > 0 && st.GETFaults < c.faults.FailGETs || c.faults.DropGETs > 0 && st.Dropped < c.faults.DropGETs {
				t.Fatalf("faults not exercised: %+v", st)
			}
			if c.faults.DuplicateDeliveries > 0 {
				waitFor(t, func() bool {
					return strings.Count(d.out.String(), `"event":"webhook_duplicate"`) >= c.faults.DuplicateDeliveries
				})
				waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"batch_exported"`) })
			}
			d.stop(t)
			// Once the daemon is gone: a second export would have been
			// logged by then.
			if n := strings.Count(d.out.String(), `"event":"batch_exported"`); c.faults.DuplicateDeliveries > 0 && n != 1 {
				t.Fatalf("batch exported %d times", n)
			}
		})
	}
}

// waitBound bounds the waits for the daemon: only a failure takes that
// long, so it leaves a loaded machine room (the suite runs beside others).
const waitBound = 30 * time.Second

// waitFor waits until cond holds, for at most waitBound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %s", waitBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLogLine waits until some line of d's log holds every one of want.
// A line the daemon writes before it answers a request, or before a file
// or state the test waited for, is not yet in d.out for sure: the test
// reads the daemon's output through a pipe and a copying goroutine, which
// may run after the test has the answer.
func waitLogLine(t *testing.T, d *daemonProc, want ...string) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !hasLogLine(d.out.String(), want...) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line holds all of %q within %s:\n%s", want, waitBound, d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExportedLine waits for the batch_exported line of id. The fetcher
// writes it once the store has the batch exported, which comes after the
// manifest that waitExport sees is in place: whatever reads the batch's
// state (the admin API, a backup, the CLI) waits for this first.
func waitExportedLine(t *testing.T, d *daemonProc, id string) {
	t.Helper()
	waitLogLine(t, d, `"event":"batch_exported"`, `"batch_id":"`+id+`"`)
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"BATCHHOOK_API_KEY=k", "BATCHHOOK_API_BASE_URL=http://127.0.0.1:1"}, "BATCHHOOK_SIGNING_SECRET"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_API_BASE_URL=http://127.0.0.1:1"}, "BATCHHOOK_API_KEY"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_API_KEY=k"}, "BATCHHOOK_API_BASE_URL"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_API_KEY=k", "BATCHHOOK_API_BASE_URL=http://x", "BATCHHOOK_PAGE_LIMIT=many"}, "BATCHHOOK_PAGE_LIMIT"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_SIGNING_SECRET_FILE=/nonexistent", "BATCHHOOK_API_KEY=k", "BATCHHOOK_API_BASE_URL=http://x"}, "BATCHHOOK_SIGNING_SECRET"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_API_KEY=k", "BATCHHOOK_API_BASE_URL=http://x", "BATCHHOOK_SINKS=file,s3"}, "BATCHHOOK_SINKS"},
		{[]string{"BATCHHOOK_SIGNING_SECRET=s", "BATCHHOOK_API_KEY=k", "BATCHHOOK_API_BASE_URL=http://x", "BATCHHOOK_SINKS=http"}, "BATCHHOOK_HTTP_SINK_URL"},
	}
	for _, c := range cases {
		cmd := exec.Command(binary, "serve")
		cmd.Env = append([]string{"BATCHHOOK_DATA_DIR=" + t.TempDir()}, c.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("%v: exit %v, want 2", c.env, err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Fatalf("%v: stderr %q, want one line naming %s", c.env, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "=s") || strings.Contains(stderr.String(), "k\"") {
			t.Fatalf("stderr shows a secret: %q", stderr.String())
		}
	}
}

func TestSecondDaemonOnSameDataDirFailsFast(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	startDaemon(t, s.addr, s.env)
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"BATCHHOOK_LISTEN_ADDR=" + freePort(t), "BATCHHOOK_ADMIN_ADDR=127.0.0.1:0"}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("second daemon started on a locked data dir")
	}
	if time.Since(start) > 10*time.Second || !strings.Contains(string(out), "locked") {
		t.Fatalf("second daemon: %s after %s", out, time.Since(start))
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "demo", "-cpfs", "120", "--keep")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var last string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		last = sc.Text()
	}
	path, ok := strings.CutPrefix(last, "export: ")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("last stdout line %q, want export: <absolute path>", last)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(path)))) })
	if ok, err := export.Verify(path); !ok || err != nil {
		t.Fatalf("demo export %s does not verify: %v", path, err)
	}
	data, _ := os.ReadFile(filepath.Join(path, export.ResultsFile))
	if n := bytes.Count(data, []byte("\n")); n != 120 {
		t.Fatalf("demo exported %d items, want 120", n)
	}
}
