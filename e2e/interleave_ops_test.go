package e2e

// The operations of TestInterleave's schedule. Each operation takes three
// numbers the PRNG drew for it whatever it is, so a replay of a seed runs
// the same operations with the same arguments even where the daemon's
// timing made a choice come out otherwise (which batch was exported yet).

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

var ilOps = []struct {
	name   string
	weight int
}{
	{"batch", 24}, {"replay", 3}, {"refetch", 10}, {"erase", 12}, {"erase+kill", 2}, {"redeliver", 6},
	{"http", 8}, {"nats", 5}, {"stall", 2}, {"locked", 2}, {"provider", 3}, {"kill", 5}, {"purge", 3}, {"pause", 12},
}

// run plays the schedule: at most cfg.maxOps operations within
// interleaveBudget, the first four new batches.
func (w *world) run() {
	total := 0
	for _, o := range ilOps {
		total += o.weight
	}
	stop := time.Now().Add(interleaveBudget)
	for i := 0; i < w.cfg.maxOps && time.Now().Before(stop); i++ {
		k, a, b, c := w.rng.IntN(total), w.rng.Uint64(), w.rng.Uint64(), w.rng.Uint64()
		name := "batch"
		for _, o := range ilOps {
			if k -= o.weight; k < 0 {
				name = o.name
				break
			}
		}
		if i < 4 {
			name = "batch"
		}
		w.fig.ops[name]++
		if name != "pause" {
			w.sample(name)
		}
		w.do(name, a, b, c)
	}
}

func (w *world) do(name string, a, b, c uint64) {
	switch name {
	case "batch":
		w.newBatch(a, b, c)
	case "replay":
		if bt := pickOf(w.acked(), a); bt != nil {
			code := postBatch(w.s.addr, bt.note)
			w.logf("replay %s → %d", bt.id, code)
			if code/100 != 2 {
				w.violate("I6", bt.id, "", "a replay of an acknowledged notification was answered %d", code)
			}
		}
	case "refetch":
		cands := w.acked()
		if sib := w.siblings(); a%2 == 0 && len(sib) > 0 {
			cands = sib
		}
		if bt := pickOf(cands, b); bt != nil {
			code, body := w.call("POST", batchPath(bt.id)+"/refetch", nil)
			w.logf("refetch %s → %d %s", bt.id, code, oneLine(string(body), 90))
		}
	case "erase":
		w.erase(a, b, c)
	case "erase+kill":
		w.eraseAndKill(a, b, c)
	case "redeliver":
		if bt := pickOf(w.acked(), a); bt != nil {
			sink := []string{"http", "nats"}[b%2]
			code, body := w.call("POST", batchPath(bt.id)+"/redeliver?sink="+sink, nil)
			w.logf("redeliver %s to %s → %d %s", bt.id, sink, code, oneLine(string(body), 90))
		}
	case "http":
		modes := []struct {
			mode  int32
			label string
		}{{httpAccept, "accepts"}, {httpAccept, "accepts"}, {httpSlow, "accepts slowly"}, {httpSlow, "accepts slowly"},
			{httpFlaky, "answers 503 to every third request"}, {httpFlaky, "answers 503 to every third request"},
			{http503, "answers 503"}, {httpHang, "hangs"}}
		m := modes[a%uint64(len(modes))]
		w.mode.Store(m.mode)
		w.logf("http receiver %s", m.label)
	case "nats":
		if w.nats.running() {
			how := "stopped"
			if a%2 == 0 { // stopped as a delivery goes, when one goes within a second
				select {
				case <-w.tap.midDelivery():
					how = "stopped mid-delivery"
				case <-time.After(time.Second):
				}
			}
			w.nats.stop()
			w.logf("nats server %s", how)
		} else {
			w.nats.start()
			w.logf("nats server started")
		}
	case "stall":
		w.stallNATS(a, b)
	case "locked":
		w.lockedPurge(b)
	case "provider":
		f := lookupsim.Faults{FailGETs: 1 + int(a%4), FailStatus: []int{500, 503}[b%2], DropGETs: int(c % 2), DropNotifications: true}
		if err := w.s.sim.SetFaults(f); err != nil {
			w.t.Fatal(err)
		}
		w.logf("provider fails the next %d page requests with %d, then drops %d", f.FailGETs, f.FailStatus, f.DropGETs)
	case "kill":
		w.sigkill()
		w.startDaemon()
		w.fig.kills++
		w.logf("SIGKILL, restarted")
	case "purge": // a purge pass runs at every start
		w.d.stop(w.t)
		w.startDaemon()
		w.fig.restarts++
		w.logf("stopped and started: a purge pass at start")
	case "pause":
		d := time.Duration(20+a%280) * time.Millisecond
		time.Sleep(d) // lets the daemon's own work run between operations; never a correctness wait
		w.logf("pause %s", d)
	}
}

// newBatch makes a batch of 1 to 28 CPFs from the pool at the simulator,
// sometimes under an id "<X>:r<N>" of an earlier batch X, and posts its
// signed notification.
func (w *world) newBatch(a, b, c uint64) {
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
	bt := &ilBatch{id: simID, simID: simID, cpfs: cpfs}
	if plain := w.plain(); c%4 == 0 && len(plain) > 0 {
		x := plain[(c>>8)%uint64(len(plain))]
		if alias := fmt.Sprintf("%s:r%d", x.id, 1+(c>>16)%4/3); w.byID[alias] == nil {
			bt.id, bt.sibling = alias, x.id
			w.prov.add(alias, simID)
			note = bytes.Replace(note, []byte(`"batch_id":"`+simID+`"`), []byte(`"batch_id":"`+alias+`"`), 1)
			w.fig.colonIDs++
		}
	}
	bt.note = note
	code := postBatch(w.s.addr, note)
	bt.acked = code/100 == 2
	w.batches = append(w.batches, bt)
	w.byID[bt.id] = bt
	status, _ := w.s.sim.Status(simID)
	w.logf("batch %s: %d cpfs, %s → %d", bt.id, n, status, code)
	if !bt.acked {
		w.violate("I6", bt.id, "", "a valid signed notification was answered %d", code)
	}
}

func (w *world) acked() []*ilBatch {
	var out []*ilBatch
	for _, bt := range w.batches {
		if bt.acked {
			out = append(out, bt)
		}
	}
	return out
}

// plain lists the acknowledged batches without ':' in their id.
func (w *world) plain() []*ilBatch {
	return slices.DeleteFunc(w.acked(), func(bt *ilBatch) bool { return strings.Contains(bt.id, ":") })
}

// siblings lists the batches X for which a batch "<X>:r<N>" exists: a
// refetch of X brings their message ids together.
func (w *world) siblings() []*ilBatch {
	var out []*ilBatch
	for _, bt := range w.acked() {
		if x := w.byID[bt.sibling]; x != nil && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func pickOf(list []*ilBatch, r uint64) *ilBatch {
	if len(list) == 0 {
		return nil
	}
	return list[r%uint64(len(list))]
}

// sample counts what was going on in the daemon as an operation began.
func (w *world) sample(op string) {
	code, body := w.call("GET", "/metrics", nil)
	if code != 200 {
		return
	}
	var pending, fetching float64
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(f[0], "batchhook_sink_pending{"):
			pending += v
		case f[0] == `batchhook_batches{state="fetching"}`, f[0] == `batchhook_batches{state="queued"}`:
			fetching += v
		}
	}
	if pending > 0 {
		w.fig.whilePending++
		if strings.HasPrefix(op, "erase") {
			w.fig.erasuresWhilePending++
		}
	}
	if w.open.Load() > 0 {
		w.fig.whileHTTPOpen++
	}
	if fetching > 0 {
		w.fig.whileFetching++
	}
}
