package e2e

// TestPowerLoss cuts the power under the daemon in its steady state: its
// data directory (exports and payments day files included) lies on the
// power-loss file system (internal/powerloss), which keeps only what was
// synced, and already holds a database, exports and day files when the
// power goes. It is TestInterleave's world (interleave_world_test.go)
// started on that file system, with the exec sink and payment events
// added and its schedule given three more operations:
//   - cut: the file system freezes after a random number of its mutating
//     requests while a burst of new batches, replays, refetches, erasures,
//     payment events and pauses runs; the daemon is SIGKILLed, the power
//     cut, the daemon started again on what survived and checked at once;
//   - restore: once the daemon is quiet, a restart with retention off (no
//     purge may follow the backup), `batchhook backup` (onto the same file
//     system), a clean stop, `batchhook restore` of that backup, with a
//     cut during the restore or right after it;
//   - compact: a clean stop and `batchhook compact`, cut the same way.
//
// After every cut (powerloss_check_e2e_test.go):
//   - P1: every batch answered 2xx is known to the daemon;
//   - P2: every exported batch's export is whole and matches its manifest;
//   - P3: no export a sink reported delivered is gone: its delivery is
//     still delivered at that version or later, or pending at a newer one
//     (a refetch or an erasure made it), and the export on disk is that
//     version or a newer one, unless the purger removed it;
//   - P4: each payment event answered 2xx is in the day files exactly
//     once, under the seq it was answered with;
//   - P5: the restart is clean: the daemon serves and reaches /readyz,
//     and says the previous run ended unclean when the power went under a
//     running daemon;
//   - P6: an erasure answered 200 in the burst left its CPF in no file
//     (TestInterleave's check right after an erasure, reported as I2).
//
// At the end the world is recovered and TestInterleave's invariants I1 to
// I6 are checked over the whole run, cuts included.
//
//	go test -race -run 'TestPowerLoss$' -count 1 ./e2e/                                # fixed seeds and one random
//	go test -race -run 'TestPowerLoss$' -count 1 ./e2e/ -powerloss.seed=7               # replay one
//	go test -race -run 'TestPowerLoss$' -count 1 ./e2e/ -powerloss.duration 1h -timeout 2h
//
// The flags are TestPowerLossFirstRun's too (powerloss_e2e_test.go):
// -run TestPowerLoss runs both.
//
// Like TestInterleave's, a seed fixes the schedule and the freeze points,
// not the timing: which request a freeze point falls on depends on how far
// the daemon's own work got.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/powerloss"
	"github.com/batchhook/batchhook/internal/testutil"
)

// powercutSeeds run every time, and one random seed after them.
var powercutSeeds = []uint64{1, 2}

const (
	// pcMaxOps bounds one seed's schedule; pcMinCuts is how many cuts it
	// makes at least (the last operations are cuts when the draw gave
	// fewer).
	pcMaxOps  = 24
	pcMinCuts = 3
	// pcFirstWindow and pcFirstOffline are the ranges a freeze point is
	// drawn from until a burst (or an offline command) ran to its end
	// unfrozen and measured how many mutating requests one makes.
	pcFirstWindow  = 400
	pcFirstOffline = 40
	pcPaySecret    = "powerloss payments secret"
)

var pcOps = []struct {
	name   string
	weight int
}{
	{"batch", 20}, {"replay", 3}, {"refetch", 8}, {"erase", 8}, {"redeliver", 3}, {"http", 6}, {"nats", 3},
	{"provider", 2}, {"kill", 2}, {"purge", 3}, {"pause", 8}, {"payment", 10},
	{"cut", 14}, {"restore", 3}, {"compact", 3},
}

// pcState is what TestPowerLoss adds to the world.
type pcState struct {
	fs      *powerloss.FS
	execDir string // where the exec sink's command copies what it is given

	mu      sync.Mutex
	victims map[*os.Process]bool // the processes on the mount, killed at a cut

	window, offWindow int64 // freeze points are drawn from 1..window (1..offWindow for offline commands)
	payN              int
	payBodies         [][]byte
	payAcked          map[string]float64 // transaction id → the seq it was answered with
	fig               pcFigures
}

// pcFigures count what the seeds did.
type pcFigures struct {
	seeds, failed                      int
	failedSeeds                        []uint64
	cuts, frozen, offlineCuts, checks  int
	batches, acked, payments, payAcked int
	refetches, erasures, purgePasses   int
	restores, compactions              int
	execDelivered                      int
	violations                         map[string]int
	elapsed                            time.Duration
}

func TestPowerLoss(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	all := &pcFigures{violations: map[string]int{}}
	began := time.Now()
	t.Cleanup(func() {
		all.elapsed = time.Since(began)
		t.Logf("%s", all)
	})
	run := func(seed uint64, parallel bool) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			runPowerLoss(t, seed, all, &mu)
		})
	}
	switch {
	case *powerlossSeed != 0:
		run(*powerlossSeed, false)
	case *powerlossDuration > 0:
		stop := began.Add(*powerlossDuration)
		if d, ok := t.Deadline(); ok && d.Add(-5*time.Minute).Before(stop) {
			stop = d.Add(-5 * time.Minute)
		}
		for _, s := range powercutSeeds {
			run(s, false)
		}
		for time.Now().Before(stop) {
			run(1+rand.Uint64N(1_000_000_000), false)
		}
	default:
		for _, s := range powercutSeeds {
			run(s, true)
		}
		run(1+rand.Uint64N(1_000_000_000), true)
	}
}

func runPowerLoss(t *testing.T, seed uint64, all *pcFigures, mu *sync.Mutex) {
	t.Logf("seed=%d (replay: go test -race -run 'TestPowerLoss$' -count 1 ./e2e/ -powerloss.seed=%d)", seed, seed)
	w := newWorldWith(t, seed, preparePowerLoss)
	// A failed seed keeps every daemon's log and the schedule (go test
	// -artifacts): a daemon that died on its own is seen there whole.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir := t.ArtifactDir()
		for i, p := range w.procs {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("daemon-%02d.log", i+1)), []byte(p.out.String()), 0o600)
		}
		_ = os.WriteFile(filepath.Join(dir, "schedule.txt"), []byte(strings.Join(w.schedule, "\n")+"\n"), 0o600)
		t.Logf("seed=%d: the daemons' logs and the schedule are in %s", seed, dir)
	})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		all.add(w)
	}()
	t.Logf("seed=%d config: %s", seed, w.cfg)
	w.runPowerLoss()
	w.finish()
	w.check()
	w.pcCheckPayments()
	w.pc.fig.execDelivered = w.execCopies()
	w.report()
	f := w.pc.fig
	t.Logf("seed=%d: %d operations, %d cuts (%d at a freeze, %d under an offline command), %d batches (%d answered 2xx), %d payment events (%d answered 2xx), %d violations in %s",
		seed, len(w.schedule), f.cuts, f.frozen, f.offlineCuts, len(w.batches), len(w.acked()), f.payments, len(w.pc.payAcked), len(w.viol),
		time.Since(w.began).Round(time.Millisecond))
}

// preparePowerLoss mounts the file system, moves DATA_DIR onto it, and
// adds the exec sink and payment events.
func preparePowerLoss(w *world) {
	t := w.t
	fs := powerloss.MountTest(t, powerloss.Options{})
	w.pc = &pcState{fs: fs, execDir: t.TempDir(), victims: map[*os.Process]bool{},
		window: pcFirstWindow, offWindow: pcFirstOffline, payAcked: map[string]float64{}}
	data := filepath.Join(fs.Dir(), "data")
	w.s.env["BATCHHOOK_DATA_DIR"] = data
	w.s.exports = filepath.Join(data, "exports")
	// The steady state: the directories exist and are durable before the
	// first start (the first run's cuts are TestPowerLossFirstRun's).
	for _, dir := range []string{data, w.s.exports, filepath.Join(w.s.exports, "payments")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pcSyncDirs(t, fs.Dir(), data, w.s.exports, filepath.Join(w.s.exports, "payments"))

	script := filepath.Join(t.TempDir(), "copy.sh")
	const body = "#!/bin/sh\nset -eu\n" +
		"/bin/cp \"$2/results.ndjson\" \"$1/.$BATCHHOOK_BATCH_ID.tmp\"\n" +
		"/bin/mv \"$1/.$BATCHHOOK_BATCH_ID.tmp\" \"$1/$BATCHHOOK_BATCH_ID.v$BATCHHOOK_EXPORT_VERSION\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{"/bin/sh", script, w.pc.execDir})
	w.cfg.withFile = true // the payments day files are the file sink's
	w.s.env["BATCHHOOK_SINKS"] = "file,http,nats,exec"
	w.s.env["BATCHHOOK_EXEC_SINK_COMMAND"] = string(argv)
	w.s.env["BATCHHOOK_EXEC_SINK_TIMEOUT"] = "10s"
	w.s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET"] = pcPaySecret
	_, js := natsJS(t, w.nats.url())
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "PAYMENTS", Subjects: []string{"batchhook.payments"},
		Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
}

// pcSyncDirs fsyncs each directory.
func pcSyncDirs(t *testing.T, dirs ...string) {
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

// runPowerLoss plays the schedule: pcMaxOps operations, the first three
// new batches, at least pcMinCuts of them cuts.
func (w *world) runPowerLoss() {
	total := 0
	for _, o := range pcOps {
		total += o.weight
	}
	for i := 0; i < pcMaxOps || w.pc.fig.cuts < pcMinCuts; i++ {
		k, a, b, c := w.rng.IntN(total), w.rng.Uint64(), w.rng.Uint64(), w.rng.Uint64()
		name := "batch"
		for _, o := range pcOps {
			if k -= o.weight; k < 0 {
				name = o.name
				break
			}
		}
		switch {
		case i < 3:
			name = "batch"
		case i >= pcMaxOps:
			name = "cut"
		}
		w.fig.ops[name]++
		switch name {
		case "payment":
			w.payment(a, b, false)
		case "cut":
			w.powerCut(a, b, c)
		case "restore", "compact":
			w.offlineCut(name, a)
		case "refetch":
			w.pc.fig.refetches++
			w.do(name, a, b, c)
		default:
			w.do(name, a, b, c)
		}
	}
}

// payment posts a payment event, or one posted before again (a retry),
// and records the seq of each answered 2xx. In a cut's burst (inBurst) a
// missing answer is the cut's doing; outside one it is a violation.
func (w *world) payment(a, b uint64, inBurst bool) {
	pc := w.pc
	var body []byte
	if a%4 == 0 && len(pc.payBodies) > 0 {
		body = pc.payBodies[b%uint64(len(pc.payBodies))]
	} else {
		pc.payN++
		body = []byte(fmt.Sprintf(`{"transaction":{"id":"pl-%d-%d","status":"paid","updated_at":"2026-11-24T10:%02d:00+0000","first_name":"Maria"}}`,
			w.seed, pc.payN, pc.payN%60))
		pc.payBodies = append(pc.payBodies, body)
	}
	pc.fig.payments++
	code, reply := postPaymentQuiet(w.s.addr, pcPaySecret, body, 1)
	tx := payTxID(body)
	w.logf("payment %s → %d %v", tx, code, reply)
	if code/100 != 2 {
		if !inBurst {
			w.violate("P4", "", "payments", "payment event %s answered %d", tx, code)
		}
		return
	}
	seq, _ := reply["seq"].(float64)
	if prev, ok := pc.payAcked[tx]; ok && prev != seq {
		w.violate("P4", "", "payments", "payment event %s answered with seq %v, earlier with %v", tx, seq, prev)
	}
	pc.payAcked[tx] = seq
}

// payTxID is the transaction id of a payment body.
func payTxID(body []byte) string {
	var b struct {
		Transaction struct {
			ID string `json:"id"`
		} `json:"transaction"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Transaction.ID
}

// cutWatch waits for a freeze; when it comes, it kills the processes on
// the mount and cuts the power at once, whatever the schedule is doing
// (an operation waiting on the frozen file system gets EIO from the cut).
type cutWatch struct {
	pc     *pcState
	stop   chan struct{}
	done   chan struct{}
	frozen bool
	err    error
}

func (pc *pcState) watch(frozen <-chan struct{}) *cutWatch {
	cw := &cutWatch{pc: pc, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(cw.done)
		select {
		case <-frozen:
			cw.frozen = true
			pc.killVictims()
			cw.err = pc.fs.Cut()
		case <-cw.stop:
		}
	}()
	return cw
}

// cut reports whether the watch has cut the power.
func (cw *cutWatch) cut() bool {
	select {
	case <-cw.done:
		return true
	default:
		return false
	}
}

// finish ends the watch; if the freeze did not come, the power goes now.
// It reports whether the cut came at the freeze.
func (cw *cutWatch) finish() (bool, error) {
	close(cw.stop)
	<-cw.done
	if cw.frozen {
		return true, cw.err
	}
	cw.pc.killVictims()
	return false, cw.pc.fs.Cut()
}

func (pc *pcState) setVictim(p *os.Process, on bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if on {
		pc.victims[p] = true
	} else {
		delete(pc.victims, p)
	}
}

func (pc *pcState) killVictims() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for p := range pc.victims {
		_ = p.Signal(syscall.SIGKILL)
	}
}

// powerCut freezes the file system after a random number of mutating
// requests while a burst of operations runs, then cuts the power, starts
// the daemon again and checks it.
func (w *world) powerCut(a, b, c uint64) {
	pc := w.pc
	delivered := w.deliveries("delivered")
	r := rand.New(rand.NewPCG(b, c))
	n := 1 + int64(a%uint64(pc.window))
	before := pc.fs.Ops()
	pc.setVictim(w.d.cmd.Process, true)
	cw := pc.watch(pc.fs.FreezeAfter(n))
	steps := 2 + r.IntN(7)
	w.logf("cut armed: freeze after %d mutating requests (drawn from 1-%d), a burst of %d operations", n, pc.window, steps)
	var erasures []pcErasure
	for i := 0; i < steps && !cw.cut(); i++ {
		x, y, z := r.Uint64(), r.Uint64(), r.Uint64()
		switch k := r.IntN(10); {
		case k < 4:
			w.burstBatch(x, y, z)
		case k < 5:
			if bt := pickOf(w.acked(), x); bt != nil {
				code := postBatch(w.s.addr, bt.note)
				w.logf("replay %s → %d", bt.id, code)
			}
		case k < 6:
			if bt := pickOf(w.acked(), x); bt != nil {
				code, body := w.call("POST", batchPath(bt.id)+"/refetch", nil)
				pc.fig.refetches++
				w.logf("refetch %s → %d %s", bt.id, code, oneLine(string(body), 90))
			}
		case k < 7:
			if e, ok := w.burstErase(x, y); ok {
				erasures = append(erasures, e)
			}
		case k < 9:
			w.payment(x, y, true)
		default:
			d := time.Duration(10+x%90) * time.Millisecond
			time.Sleep(d) // lets the daemon's own work run within the burst; never a correctness wait
			w.logf("pause %s", d)
		}
	}
	atFreeze, err := cw.finish()
	pc.setVictim(w.d.cmd.Process, false)
	if err != nil {
		w.fatalf("cut: %v", err)
	}
	used := pc.fs.Ops() - before
	pc.fig.cuts++
	if atFreeze {
		pc.fig.frozen++
		w.logf("CUT at the freeze (%d mutating requests)", n)
	} else {
		pc.window = max(pc.window, used) // a freeze point within reach of the next burst
		w.logf("CUT at the end of the burst, before the freeze (%d mutating requests)", used)
	}
	w.reap()
	w.restartAfterCut(true)
	w.checkAfterCut(delivered)
	for _, e := range erasures {
		w.noteErasure(e.cpf, e.row, e.done, "api, in a cut's burst")
		w.pc.fig.erasures++
	}
}

// reap waits for the killed daemon.
func (w *world) reap() {
	select {
	case err := <-w.d.done:
		w.d.done <- err
	case <-time.After(waitBound):
		w.fatalf("the daemon killed at the cut did not exit within %s", waitBound)
	}
}

// burstBatch makes a batch at the simulator and posts its notification;
// an answer other than 2xx is the cut's doing.
func (w *world) burstBatch(a, b, c uint64) {
	n := 1 + int(a%28)
	perm := rand.New(rand.NewPCG(b, c)).Perm(len(w.pool))
	cpfs := make([]string, n)
	for i := range cpfs {
		cpfs[i] = w.pool[perm[i]]
	}
	simID, err := w.s.sim.Submit(cpfs)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.s.sim.WaitFinal(ctx, simID); err != nil {
		w.t.Fatal(err)
	}
	note, _ := w.s.sim.Notification(simID)
	bt := &ilBatch{id: simID, simID: simID, cpfs: cpfs, note: note}
	code := postBatch(w.s.addr, note)
	bt.acked = code/100 == 2
	w.batches = append(w.batches, bt)
	w.byID[bt.id] = bt
	w.logf("batch %s: %d cpfs → %d (in a cut's burst)", bt.id, n, code)
}

// pcErasure is an erasure answered 200 in a burst, noted once the daemon
// is back.
type pcErasure struct {
	cpf  string
	row  admin.ErasureView
	done time.Time
}

func (w *world) burstErase(a, b uint64) (pcErasure, bool) {
	value := w.eraseCandidate(a, b)
	if value == "" {
		return pcErasure{}, false
	}
	body, _ := json.Marshal(map[string]string{"cpf": value})
	code, raw := w.call("POST", "/admin/erasures", body)
	done := time.Now()
	var row admin.ErasureView
	if code != 200 || json.Unmarshal(raw, &row) != nil {
		w.logf("erase (in a cut's burst) → %d %s", code, oneLine(string(raw), 90))
		return pcErasure{}, false
	}
	w.logf("erase → %s (in a cut's burst; checked after the cut)", row.ID)
	return pcErasure{cpf: value, row: row, done: done}, true
}

// offlineCut runs an offline command (restore of a fresh backup, or
// compact) on the stopped daemon's data directory with the file system
// set to freeze part-way, cuts the power (at the freeze, or once the
// command is done), and starts the daemon again.
func (w *world) offlineCut(op string, a uint64) {
	pc := w.pc
	data := w.s.env["BATCHHOOK_DATA_DIR"]
	var args []string
	if op == "restore" {
		// Quiet first, so that the backup holds all the daemon knows and
		// the restore takes nothing back.
		w.mode.Store(httpAccept)
		if !w.nats.running() {
			w.nats.start()
		}
		w.logf("http receiver accepts, nats server running: a quiet daemon for the backup")
		w.quiesce()
		// The backup is taken from a daemon with retention off: a purge
		// between the backup and the stop would delete an export the
		// backup still has as exported, and the restore would bring back
		// what docs/operations.md says a restore of an older backup brings
		// back (an exported batch without its export), not what P2 checks.
		w.d.stop(w.t)
		kept := [2]string{w.s.env["BATCHHOOK_EXPORT_RETENTION"], w.s.env["BATCHHOOK_RECORD_RETENTION"]}
		w.s.env["BATCHHOOK_EXPORT_RETENTION"], w.s.env["BATCHHOOK_RECORD_RETENTION"] = "0", "0"
		w.startDaemon()
		w.s.env["BATCHHOOK_EXPORT_RETENTION"], w.s.env["BATCHHOOK_RECORD_RETENTION"] = kept[0], kept[1]
		w.logf("restarted with retention off for the backup")
		w.quiesce()
		file := filepath.Join(pc.fs.Dir(), fmt.Sprintf("backup-%d.db", pc.fig.restores+1))
		out, errOut, rc := runCLIWith(w.t, w.d, ilToken, 90*time.Second, "backup", file)
		if rc != 0 {
			w.fatalf("backup: exit %d\n%s%s", rc, out, errOut)
		}
		w.logf("backup %s", filepath.Base(file))
		args = []string{"restore", file, "--data-dir", data}
		pc.fig.restores++
	} else {
		args = []string{"compact", "--data-dir", data}
		pc.fig.compactions++
	}
	delivered := w.deliveries("delivered")
	w.d.stop(w.t)
	n := 1 + int64(a%uint64(pc.offWindow))
	before := pc.fs.Ops()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BATCHHOOK_DATA_DIR=" + data}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cw := pc.watch(pc.fs.FreezeAfter(n))
	if err := cmd.Start(); err != nil {
		cw.finish()
		w.t.Fatal(err)
	}
	pc.setVictim(cmd.Process, true)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-exited:
	case <-cw.done:
		runErr = <-exited
	}
	atFreeze, err := cw.finish()
	pc.setVictim(cmd.Process, false)
	if err != nil {
		w.fatalf("cut: %v", err)
	}
	pc.fig.cuts++
	pc.fig.offlineCuts++
	if atFreeze {
		pc.fig.frozen++
		w.logf("%s: CUT at the freeze after %d mutating requests (%v): %s", op, n, runErr, oneLine(out.String(), 160))
	} else {
		if runErr != nil {
			w.fatalf("%s failed before any cut: %v\n%s", op, runErr, out.String())
		}
		pc.offWindow = max(pc.offWindow, pc.fs.Ops()-before)
		w.logf("%s done (%s), then CUT", op, oneLine(out.String(), 160))
	}
	w.restartAfterCut(false)
	w.checkAfterCut(delivered)
}

func (f *pcFigures) add(w *world) {
	g := w.pc.fig
	f.seeds++
	if len(w.viol) > 0 || w.t.Failed() {
		f.failed++
		f.failedSeeds = append(f.failedSeeds, w.seed)
	}
	f.cuts += g.cuts
	f.frozen += g.frozen
	f.offlineCuts += g.offlineCuts
	f.checks += g.checks
	f.batches += len(w.batches)
	f.acked += len(w.acked())
	f.payments += g.payments
	f.payAcked += len(w.pc.payAcked)
	f.refetches += g.refetches
	f.erasures += len(w.erasures)
	f.restores += g.restores
	f.compactions += g.compactions
	for _, p := range w.procs {
		f.purgePasses += strings.Count(p.out.String(), `"event":"purge_pass_finished"`)
	}
	f.execDelivered += g.execDelivered
	for _, v := range w.viol {
		f.violations[v.inv]++
	}
}

func (f *pcFigures) String() string {
	var viol []string
	n := 0
	for _, k := range sortedKeys(f.violations) {
		viol = append(viol, fmt.Sprintf("%s=%d", k, f.violations[k]))
		n += f.violations[k]
	}
	return fmt.Sprintf("powerloss: %d seeds in %s, %d with violations %v\n"+
		"  cuts %d (%d at a freeze point, %d under restore or compact), checks after a cut %d\n"+
		"  batches %d (%d acknowledged), payment events %d (%d acknowledged), refetches %d, erasures %d, purge_pass_finished %d\n"+
		"  restores %d, compactions %d, exec deliveries seen %d\n"+
		"  violations %d: %s",
		f.seeds, f.elapsed.Round(time.Second), f.failed, f.failedSeeds,
		f.cuts, f.frozen, f.offlineCuts, f.checks,
		f.batches, f.acked, f.payments, f.payAcked, f.refetches, f.erasures, f.purgePasses,
		f.restores, f.compactions, f.execDelivered, n, strings.Join(viol, " "))
}

// execCopies counts the copies the exec sink's command made (one for each
// version of an export it was given and finished).
func (w *world) execCopies() int {
	entries, err := os.ReadDir(w.pc.execDir)
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}
