package e2e

// TestInterleave drives the real binary through a random schedule chosen
// by a seeded PRNG: new batches (some under ids with ':'), replays,
// refetches, erasures (some cut by a SIGKILL, one while the daemon's link
// to NATS is frozen, one of an export whose purge is committed but whose
// files a disk refuses to delete), redelivers, purge passes, provider
// faults, sink outages (the http receiver answering 503, now and then or
// always, slowly, or hanging past the sink timeout; the NATS server
// stopped and started again) and SIGKILLs. Then, every sink recovered and
// the daemon quiet, it checks the invariants I1 to I6
// (interleave_check_test.go, interleave_view_test.go).
//
// The seed fixes the schedule, its operations and their arguments, not
// the timing: a replay runs the same operations while the daemon's own
// work falls between them as the machine allows.
//
//	go test -race -run TestInterleave -count 1 ./e2e/                      # fixed seeds and one random
//	go test -race -run TestInterleave -count 1 ./e2e/ -interleave.seed=7   # replay one
//	go test -race -run TestInterleave -count 1 ./e2e/ -interleave.duration 1h -timeout 2h

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	interleaveSeed = flag.Uint64("interleave.seed", 0, "TestInterleave: run this seed only (0: the fixed seeds, then one random seed)")
	interleaveFor  = flag.Duration("interleave.duration", 0, "TestInterleave: after the fixed seeds, run random seeds until this much time has passed (raise -timeout too)")
)

// interleaveSeeds run every time, and one random seed after them.
var interleaveSeeds = []uint64{1, 2}

// interleaveBudget bounds one seed's schedule in time; its config bounds
// the number of operations.
const interleaveBudget = 7 * time.Second

func TestInterleave(t *testing.T) {
	t.Parallel()
	all := &interleaveFigures{ops: map[string]int{}, violations: map[string]int{}}
	began := time.Now()
	run := func(seed uint64) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runInterleave(t, seed, all) })
	}
	switch {
	case *interleaveSeed != 0:
		run(*interleaveSeed)
	case *interleaveFor > 0:
		stop := began.Add(*interleaveFor)
		if d, ok := t.Deadline(); ok && d.Add(-5*time.Minute).Before(stop) {
			stop = d.Add(-5 * time.Minute) // room for the last seed before the test binary's timeout
		}
		for _, s := range interleaveSeeds {
			run(s)
		}
		for time.Now().Before(stop) {
			run(1 + rand.Uint64N(1_000_000_000))
		}
	default:
		for _, s := range interleaveSeeds {
			run(s)
		}
		run(1 + rand.Uint64N(1_000_000_000))
	}
	all.elapsed = time.Since(began)
	t.Logf("%s", all)
}

// seedFigures count what one seed's schedule did and met.
type seedFigures struct {
	ops                                        map[string]int
	kills, restarts, colonIDs, erasedItems     int
	whilePending, whileHTTPOpen, whileFetching int
	erasuresWhilePending, erasuresMidDelivery  int
}

// interleaveFigures add them up over the seeds of a run.
type interleaveFigures struct {
	seeds, failed, batches, erasures int
	failedSeeds                      []uint64
	sum                              seedFigures
	ops                              map[string]int
	violations                       map[string]int
	elapsed                          time.Duration
}

func (f *interleaveFigures) add(w *world) {
	f.seeds++
	if len(w.viol) > 0 || w.t.Failed() {
		f.failed++
		f.failedSeeds = append(f.failedSeeds, w.seed)
	}
	f.batches += len(w.batches)
	f.erasures += len(w.erasures)
	for k, n := range w.fig.ops {
		f.ops[k] += n
	}
	for _, v := range w.viol {
		f.violations[v.inv]++
	}
	g, s := w.fig, &f.sum
	s.kills += g.kills
	s.restarts += g.restarts
	s.colonIDs += g.colonIDs
	s.erasedItems += g.erasedItems
	s.whilePending += g.whilePending
	s.whileHTTPOpen += g.whileHTTPOpen
	s.whileFetching += g.whileFetching
	s.erasuresWhilePending += g.erasuresWhilePending
	s.erasuresMidDelivery += g.erasuresMidDelivery
}

func (f *interleaveFigures) String() string {
	var ops []string
	total := 0
	for _, k := range sortedKeys(f.ops) {
		ops = append(ops, fmt.Sprintf("%s=%d", k, f.ops[k]))
		total += f.ops[k]
	}
	var viol []string
	for _, k := range sortedKeys(f.violations) {
		viol = append(viol, fmt.Sprintf("%s=%d", k, f.violations[k]))
	}
	return fmt.Sprintf("interleave: %d seeds in %s, %d with violations %v\n"+
		"  operations %d: %s\n"+
		"  SIGKILLs %d, stop+start %d, batches %d (%d under ids with ':'), erasures %d (%d items)\n"+
		"  operations begun while deliveries were pending %d, while an http request was open %d, while batches were queued or fetching %d\n"+
		"  erasures begun while deliveries were pending %d; erasures that found a delivery part-way (may_have_received) %d\n"+
		"  violations by invariant: %s",
		f.seeds, f.elapsed.Round(time.Second), f.failed, f.failedSeeds, total, strings.Join(ops, " "),
		f.sum.kills, f.sum.restarts, f.batches, f.sum.colonIDs, f.erasures, f.sum.erasedItems,
		f.sum.whilePending, f.sum.whileHTTPOpen, f.sum.whileFetching, f.sum.erasuresWhilePending, f.sum.erasuresMidDelivery, strings.Join(viol, " "))
}

func runInterleave(t *testing.T, seed uint64, all *interleaveFigures) {
	t.Logf("seed=%d (replay: go test -race -run TestInterleave -count 1 ./e2e/ -interleave.seed=%d)", seed, seed)
	w := newWorld(t, seed)
	defer all.add(w)
	t.Logf("seed=%d config: %s", seed, w.cfg)
	w.run()
	w.finish()
	w.check()
	w.report()
	t.Logf("seed=%d: %d operations, %d batches, %d erasures, %d SIGKILLs, %d violations in %s",
		seed, len(w.schedule), len(w.batches), len(w.erasures), w.fig.kills, len(w.viol), time.Since(w.began).Round(time.Millisecond))
}

// fatalf reports what was found so far and ends the seed.
func (w *world) fatalf(format string, args ...any) {
	w.t.Helper()
	w.report()
	w.t.Fatalf("seed=%d: "+format+"%s", append(append([]any{w.seed}, args...), w.daemonGone())...)
}

// daemonGone says so when the daemon exited on its own, with its last log
// lines (which never hold a CPF: checkErasedEnd makes sure).
func (w *world) daemonGone() string {
	select {
	case err := <-w.d.done:
		w.d.done <- err
		lines := strings.Split(strings.TrimSpace(w.d.out.String()), "\n")
		return fmt.Sprintf("\nthe daemon exited: %v; its last lines:\n%s", err, strings.Join(lines[max(0, len(lines)-20):], "\n"))
	default:
		return ""
	}
}

// report fails the seed with its violations, briefly, and keeps the whole
// schedule and the daemon logs in the test's artifact directory.
func (w *world) report() {
	w.t.Helper()
	if len(w.viol) == w.reported && !w.t.Failed() {
		return
	}
	dir := w.t.ArtifactDir()
	_ = os.WriteFile(filepath.Join(dir, "schedule.txt"), []byte(strings.Join(w.schedule, "\n")+"\n"), 0o600)
	for i, p := range w.procs {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("daemon-%02d.log", i+1)), []byte(p.out.String()), 0o600)
	}
	viol := slices.Clone(w.viol[w.reported:])
	w.reported = len(w.viol)
	slices.SortStableFunc(viol, func(a, b violation) int { return strings.Compare(a.inv, b.inv) })
	for i, v := range viol {
		if i == 25 {
			w.t.Errorf("seed=%d: and %d more violations (schedule.txt)", w.seed, len(viol)-i)
			break
		}
		w.t.Errorf("seed=%d %s batch=%s sink=%s: %s", w.seed, v.inv, v.batch, v.sink, v.msg)
	}
	ops := slices.DeleteFunc(slices.Clone(w.schedule), func(l string) bool { return strings.Contains(l, " VIOLATION ") })
	w.t.Logf("seed=%d: config %s\nlast operations:\n%s", w.seed, w.cfg, strings.Join(ops[max(0, len(ops)-25):], "\n"))
	w.t.Logf("seed=%d: schedule and daemon logs in %s (kept with go test -artifacts); replay: %s", w.seed, dir, w.replay())
}

// replay is the command that runs the world's seed again.
func (w *world) replay() string {
	if w.pc != nil {
		return fmt.Sprintf("go test -race -run 'TestPowerLoss$' -count 1 ./e2e/ -powerloss.seed=%d", w.seed)
	}
	return fmt.Sprintf("go test -race -run TestInterleave -count 1 ./e2e/ -interleave.seed=%d", w.seed)
}
