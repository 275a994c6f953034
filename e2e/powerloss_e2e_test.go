package e2e

// Power cuts on the first run, on the real binary: DATA_DIR lies on the
// power-loss file system (internal/powerloss), which keeps only what was
// synced. Each cycle starts the daemon on a data directory it has never
// seen (one it creates, or one that exists and is empty), drives signed
// batches through fetch, export and the http sink, freezes the file
// system after a random number of its mutating requests, kills the
// daemon, cuts the power and starts it again on what survived. Then
// every batch answered 2xx must be known, every exported batch's export
// whole, every export the http sink delivered still there, and the
// restart clean.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/powerloss"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/httpsink"
)

var (
	powerlossSeed     = flag.Uint64("powerloss.seed", 0, "replay the power-loss tests with this seed (0: a new one, printed)")
	powerlossDuration = flag.Duration("powerloss.duration", 0, "run each power-loss test for this long (0: the suite's short form, a few cuts)")
)

const (
	plToken = "powerloss-admin-token-for-e2e"
	// plCycles is the short form's cuts per test.
	plCycles = 3
	// plBatches is how many batches a cycle posts at most.
	plBatches = 6
	// plFirstGuess is the range freeze points are drawn from until a cycle
	// has run to its end unfrozen and measured how many mutating requests
	// a whole first run makes (750 to 1,000 of them, measured on the
	// code of the time).
	plFirstGuess = 900
)

// plWorld is one power-loss test: the mount, the simulator, the http
// receiver, the daemon's configuration, the figures and the violations.
type plWorld struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	fs       *powerloss.FS
	s        *setup
	recv     *demo.Receiver
	existing bool  // the data directory exists (empty) before the first start
	perRun   int64 // the most mutating requests a whole unfrozen cycle made (plFirstGuess until one did)
	measured bool
	fig      struct{ cuts, frozen, posted, acked, exported, delivered int }
	viol     []string
}

func TestPowerLossFirstRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		existing bool
	}{
		{"DATA_DIR created by batchhook", false},
		{"DATA_DIR existing and empty", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newPLWorld(t, c.existing)
			deadline := time.Now().Add(*powerlossDuration)
			for n := 0; n < plCycles || time.Now().Before(deadline); n++ {
				w.cycle(n)
			}
			w.report()
		})
	}
}

func newPLWorld(t *testing.T, existing bool) *plWorld {
	seed := *powerlossSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./e2e -run 'TestPowerLossFirstRun' -powerloss.seed %d)", seed, seed)
	fs := powerloss.MountTest(t, powerloss.Options{})
	s, recv, _ := httpSinkSetup(t, lookupsim.Options{ProcessingDelay: 10 * time.Millisecond,
		SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited,
		Faults: lookupsim.Faults{DropNotifications: true}}, 7, nil) // the test posts every notification itself
	for k, v := range map[string]string{"ADMIN_TOKEN": plToken, "PAGE_LIMIT": "40", "HTTP_SINK_TIMEOUT": "2s",
		"BACKOFF_BASE": "50ms", "BACKOFF_MAX": "500ms"} {
		s.env["BATCHHOOK_"+k] = v
	}
	return &plWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), fs: fs, s: s, recv: recv,
		existing: existing, perRun: plFirstGuess}
}

func (w *plWorld) violate(format string, args ...any) {
	w.viol = append(w.viol, fmt.Sprintf(format, args...))
}

// cycle is one first run, cut, restart and check, on a data directory of
// its own.
func (w *plWorld) cycle(n int) {
	t := w.t
	data := filepath.Join(w.fs.Dir(), fmt.Sprintf("run%d", n), "data")
	if w.existing {
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		// The operator's directory is durable before batchhook starts.
		syncDirs(t, filepath.Dir(data), w.fs.Dir())
	}
	w.s.env["BATCHHOOK_DATA_DIR"] = data
	w.s.exports = filepath.Join(data, "exports")

	freezeAt := 1 + w.rng.Int64N(w.perRun)
	opsBefore := w.fs.Ops()
	frozen := w.fs.FreezeAfter(freezeAt)
	d := w.start(frozen)
	var posted, acked []string
	if d != nil {
		posted, acked = w.drive(n, d, frozen)
	}
	where := fmt.Sprintf("after %d mutating requests (drawn from 1-%d)", freezeAt, w.perRun)
	select {
	case <-frozen:
		w.fig.frozen++
	default: // the cycle ran to its end first: measure it, cut now
		used := w.fs.Ops() - opsBefore
		where = fmt.Sprintf("at the end of the run, after its %d mutating requests (the freeze was drawn at %d)", used, freezeAt)
		if !w.measured {
			w.perRun, w.measured = used, true
		}
		w.perRun = max(w.perRun, used)
	}
	if d != nil {
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
	}
	if err := w.fs.Cut(); err != nil {
		t.Fatalf("cycle %d: %v", n, err)
	}
	if d != nil {
		<-d.done
		d.done <- nil
	}
	w.fig.cuts++
	t.Logf("cycle %d: cut %s; %d batches answered 2xx", n, where, len(acked))

	d2 := startDaemon(t, w.s.addr, w.s.env) // fails the test if the restart does not start
	w.check(n, d2, posted, acked)
	d2.stop(t)
	// What a later cycle does not need goes, so that an hour's run fits in memory.
	if err := os.RemoveAll(filepath.Dir(data)); err != nil {
		t.Fatal(err)
	}
}

// syncDirs fsyncs each directory.
func syncDirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			t.Fatalf("fsync %s: %v", dir, err)
		}
	}
}

// start starts the daemon and waits for its start line; nil when the
// file system froze first (the daemon is then killed and reaped at the
// cut: it cannot exit before).
func (w *plWorld) start(frozen <-chan struct{}) *daemonProc {
	t := w.t
	cmd := newServeCmd(binary, w.s.addr, w.s.env)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, out: out, addr: w.s.addr, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() { d.kill() })
	started := regexp.MustCompile(`"event":"started".*"admin_addr":"([^"]+)"`)
	deadline := time.After(waitBound)
	for {
		if m := started.FindStringSubmatch(out.String()); m != nil {
			d.admin = "http://" + m[1]
			return d
		}
		select {
		case <-frozen:
			return d
		case err := <-d.done:
			t.Fatalf("batchhook exited at its first start: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("batchhook did not start:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newServeCmd is the command startBinary runs.
func newServeCmd(bin, addr string, env map[string]string) *exec.Cmd {
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BATCHHOOK_LISTEN_ADDR=" + addr, "BATCHHOOK_ADMIN_ADDR=127.0.0.1:0"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// drive posts up to plBatches notifications and waits for their http
// deliveries, until the file system freezes. It returns the batches
// posted and those answered 2xx.
func (w *plWorld) drive(n int, d *daemonProc, frozen <-chan struct{}) (posted, acked []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-frozen:
			cancel()
		case <-ctx.Done():
		}
	}()
	for i := 0; i < plBatches && ctx.Err() == nil; i++ {
		id, err := w.s.sim.Submit(lookupsim.SampleCPFs(10+w.rng.IntN(70), int64(w.seed%1_000_000)+int64(n*plBatches+i)))
		if err != nil {
			w.t.Fatal(err)
		}
		body := w.notification(ctx, id)
		if body == nil {
			break
		}
		w.fig.posted++
		posted = append(posted, id)
		if code := plPost(ctx, w.s.addr, body); code/100 == 2 {
			acked = append(acked, id)
			w.fig.acked++
		}
	}
	// Until every acknowledged batch is delivered whole, or the freeze.
	deadline := time.After(waitBound)
	for ctx.Err() == nil {
		if len(w.delivered(acked)) == len(acked) {
			return posted, acked
		}
		select {
		case <-ctx.Done():
		case <-deadline:
			w.t.Fatalf("cycle %d: the batches answered 2xx were not delivered within %s:\n%s", n, waitBound, lastLines(d.out.String(), 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return posted, acked
}

// notification waits for the simulator to finish id and returns its
// signed body (nil if ctx ends first).
func (w *plWorld) notification(ctx context.Context, id string) []byte {
	for {
		if body, ok := w.s.sim.Notification(id); ok {
			return body
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// plPost signs and posts a notification; 0 when no reply came (ctx
// ended: the freeze).
func plPost(ctx context.Context, addr string, body []byte) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(e2eSecret), body))
	req.Header.Set("X-Service-Attempt", "1")
	resp, err := (&http.Client{Timeout: waitBound}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// delivered returns which of ids the receiver took whole (every part
// answered 200).
func (w *plWorld) delivered(ids []string) map[string]bool {
	msgs := w.recv.Messages()
	out := map[string]bool{}
	for _, id := range ids {
		if _, err := demo.Assemble(msgs, id); err == nil {
			out[id] = true
		}
	}
	return out
}

// touched returns which of ids the receiver accepted any part of: the
// daemon had published their export.
func (w *plWorld) touched(ids []string) []string {
	seen := map[string]bool{}
	for _, m := range w.recv.Messages() {
		if m.Status != http.StatusOK {
			continue
		}
		if p, err := httpsink.DecodePart(m.Body); err == nil {
			seen[p.Data.BatchID] = true
		}
	}
	var out []string
	for _, id := range ids {
		if seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// check holds the restarted daemon to the promises: every batch answered
// 2xx is known, every exported batch's export is whole, no export the
// http sink delivered is gone, the restart is clean; then every batch
// answered 2xx is exported in the end.
func (w *plWorld) check(n int, d *daemonProc, posted, acked []string) {
	t := w.t
	api := &apiClient{base: d.admin, token: plToken, http: &http.Client{Timeout: waitBound}}
	view := func(id string) (admin.BatchView, bool) {
		raw, err := api.send(context.Background(), http.MethodGet, batchPath(id), "", nil)
		if err != nil {
			return admin.BatchView{}, false
		}
		var v admin.BatchView
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("batch %s: %v", id, err)
		}
		return v, true
	}
	waitFor(t, func() bool { code, _ := get(t, d.admin+"/readyz", ""); return code == 200 })
	touched := w.touched(posted)
	for _, id := range acked {
		v, known := view(id)
		switch {
		case !known:
			w.violate("cycle %d: batch %s was answered 2xx and is unknown after the cut", n, id)
		case v.State == "exported":
			w.checkExport(n, id, "is exported")
		}
	}
	for _, id := range touched {
		if _, known := view(id); !known {
			w.violate("cycle %d: batch %s was delivered by the http sink and is unknown after the cut", n, id)
		}
		w.checkExport(n, id, "was delivered by the http sink")
	}
	if lines := errorLines(d.out.String()); len(lines) > 0 {
		w.violate("cycle %d: the restart logged errors:\n%s", n, strings.Join(lines, "\n"))
	}
	// The restart finishes what the cut interrupted.
	for _, id := range acked {
		deadline := time.Now().Add(waitBound)
		for {
			v, known := view(id)
			if !known {
				break // already a violation
			}
			if v.State == "exported" {
				w.fig.exported++
				break
			}
			if time.Now().After(deadline) {
				w.violate("cycle %d: batch %s is %q %s after the restart, not exported", n, id, v.State, waitBound)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w.fig.delivered += len(touched)
}

// checkExport: the export of id is in place and matches its manifest.
func (w *plWorld) checkExport(n int, id, why string) {
	dir := filepath.Join(w.s.exports, id)
	if ok, err := export.Verify(dir); !ok {
		w.violate("cycle %d: batch %s %s, and its export is not whole after the cut: %v", n, id, why, err)
	}
}

// errorLines are the log lines at level error or above.
func errorLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"fatal"`) || strings.Contains(l, `"level":"panic"`) {
			out = append(out, oneLine(l, 300))
		}
	}
	return out
}

// report prints the figures and fails the test on any violation.
func (w *plWorld) report() {
	w.t.Logf("powerloss: %d cuts (%d inside a run), %d batches posted, %d answered 2xx, %d exported after the restarts, %d delivered by the http sink, %d violations (seed %d)",
		w.fig.cuts, w.fig.frozen, w.fig.posted, w.fig.acked, w.fig.exported, w.fig.delivered, len(w.viol), w.seed)
	if len(w.viol) > 0 {
		shown := w.viol[:min(len(w.viol), 20)]
		w.t.Errorf("%d violations (seed %d; replay with -powerloss.seed %d):\n%s", len(w.viol), w.seed, w.seed, strings.Join(shown, "\n"))
	}
}
