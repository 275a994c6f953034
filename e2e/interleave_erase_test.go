package e2e

// TestInterleave's erasures: plain ones through the admin API or the CLI,
// one cut by a SIGKILL, one while the daemon's link to NATS is frozen as
// a delivery opens its export, and one of an export whose purge is
// committed but whose files a disk refuses to delete. Each is checked at
// once for the CPF left in a file (checkErasedNow).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/lookupsim"
)

// erase erases a CPF of an acknowledged batch that has items, through the
// admin API or (one in five) the CLI, and checks the files at once.
func (w *world) erase(a, b, c uint64) {
	value := w.eraseCandidate(a, b)
	if value == "" {
		return
	}
	form := value
	if c%2 == 1 {
		form = value[:3] + "." + value[3:6] + "." + value[6:9] + "-" + value[9:]
	}
	var code int
	var raw []byte
	how := "api"
	if c%5 == 0 {
		how = "cli"
		out, errOut, rc := runCLIWith(w.t, w.d, ilToken, 90*time.Second, "erase", "--cpf", form, "--json")
		code, raw = http.StatusOK, []byte(out)
		if rc != 0 {
			code, raw = rc, []byte(errOut)
		}
	} else {
		body, _ := json.Marshal(map[string]string{"cpf": form})
		code, raw = w.call("POST", "/admin/erasures", body)
	}
	done := time.Now()
	var row admin.ErasureView
	if code != http.StatusOK || json.Unmarshal(raw, &row) != nil {
		w.logf("erase %s (%s) → %d %s", cpf.Mask(value), how, code, oneLine(string(raw), 90))
		w.violate("I2", "", "", "the erasure of a valid CPF answered %d: %s", code, oneLine(string(raw), 120))
		return
	}
	w.noteErasure(value, row, done, how)
}

// eraseAndKill sends an erasure and SIGKILLs the daemon while it may be
// running. Recorded, it is finished by the next start, before it serves.
func (w *world) eraseAndKill(a, b, c uint64) {
	value := w.eraseCandidate(a, b)
	if value == "" {
		return
	}
	before := len(w.erasureList())
	api := w.api()
	type reply struct {
		raw []byte
		err error
		at  time.Time
	}
	got := make(chan reply, 1)
	go func() {
		body, _ := json.Marshal(map[string]string{"cpf": value})
		raw, err := api.send(context.Background(), "POST", "/admin/erasures", "application/json", bytes.NewReader(body))
		got <- reply{raw, err, time.Now()}
	}()
	time.Sleep(time.Duration(c%40) * time.Millisecond) // where the kill lands; never a correctness wait
	w.sigkill()
	w.startDaemon()
	started := time.Now()
	w.fig.kills++
	r := <-got
	var row admin.ErasureView
	switch list := w.erasureList(); {
	case r.err == nil && json.Unmarshal(r.raw, &row) == nil:
		w.noteErasure(value, row, r.at, "api, answered before the kill")
	case len(list) > before:
		row = list[len(list)-1]
		if row.State != "done" {
			w.violate("I2", "", "", "erasure %s cut by a kill is %s after the restart, not done", row.ID, row.State)
		}
		w.noteErasure(value, row, started, "api, cut by the kill, finished by the restart")
	default:
		w.logf("erase %s cut by the kill before it was recorded", cpf.Mask(value))
	}
}

func (w *world) noteErasure(value string, row admin.ErasureView, done time.Time, how string) {
	listed := map[string]bool{}
	w.erasures = append(w.erasures, ilErasure{cpf: value, id: row.ID, done: done, unrewritten: row.Unrewritten, listed: listed})
	w.erased[value] = true
	var parts []string
	mid := false
	for _, bt := range row.Batches {
		var sinks []string
		for _, s := range bt.Sinks {
			listed[bt.BatchID+" "+s.Sink] = true
			sinks = append(sinks, s.Sink+"="+s.Received)
			mid = mid || s.Received == "may_have_received"
		}
		parts = append(parts, fmt.Sprintf("%s(-%d %s)", bt.BatchID, bt.Items, strings.Join(sinks, ",")))
		w.fig.erasedItems += int(bt.Items)
	}
	if mid {
		w.fig.erasuresMidDelivery++
	}
	w.logf("erase %s (%s) → %s batches=[%s] unrewritten=%v", cpf.Mask(value), how, row.ID, strings.Join(parts, " "), row.Unrewritten)
	w.checkErasedNow(w.erasures[len(w.erasures)-1])
}

// stallNATS plays a NATS server slow to greet a new connection. The
// daemon, restarted while the server is down, must connect again; the
// link is frozen as the server comes back, an erasure runs while a nats
// delivery waits for the greeting (after its export was opened and
// checked), and the link thaws within the connect timeout.
func (w *world) stallNATS(a, b uint64) {
	if w.nats.running() {
		w.nats.stop()
	}
	w.sigkill()
	w.startDaemon()
	w.fig.kills++
	conns := w.gate.connections()
	w.gate.frozen.Store(true)
	defer w.gate.frozen.Store(false)
	w.nats.start()
	deadline := time.Now().Add(2 * time.Second)
	for w.gate.connections() == conns && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	waiting := w.gate.connections() > conns
	value := w.pendingCandidate("nats", a)
	if value == "" {
		value = w.eraseCandidate(a, b)
	}
	if value == "" {
		w.logf("nats link frozen and thawed; nothing to erase")
		return
	}
	body, _ := json.Marshal(map[string]string{"cpf": value})
	code, raw := w.call("POST", "/admin/erasures", body)
	done := time.Now()
	w.gate.frozen.Store(false)
	var row admin.ErasureView
	if code != http.StatusOK || json.Unmarshal(raw, &row) != nil {
		w.violate("I2", "", "", "the erasure of a valid CPF answered %d: %s", code, oneLine(string(raw), 120))
		return
	}
	w.logf("SIGKILL and restart with nats down; nats link frozen as the server came back (a connection waiting: %v)", waiting)
	w.noteErasure(value, row, done, "api, during the frozen nats link")
}

// lockedPurge makes the results of the oldest export on disk undeletable
// (immutable, as a disk refusing a delete), waits until the purger
// committed its purge (the removal then fails and the file stays), erases
// a CPF of it, and unlocks it.
func (w *world) lockedPurge(r uint64) {
	if !w.cfg.withFile || w.cfg.exportRet == "0" {
		return
	}
	var bt *ilBatch
	for _, c := range w.acked() {
		st, _ := w.s.sim.Status(c.simID)
		if _, err := os.Stat(filepath.Join(w.s.exports, c.id, "results.ndjson")); err == nil && st != lookupsim.StatusFailed {
			bt = c
			break
		}
	}
	if bt == nil {
		return
	}
	if err := setImmutable(filepath.Join(w.s.exports, bt.id, "results.ndjson"), true); err != nil {
		w.logf("cannot make the results of %s undeletable: %v", bt.id, err)
		return
	}
	defer w.unlockExports()
	deadline, state := time.Now().Add(4*time.Second), ""
	for state != "purged" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_, body := w.call("GET", batchPath(bt.id), nil)
		var row admin.BatchView
		_ = json.Unmarshal(body, &row)
		state = row.State
	}
	w.logf("the results of %s made undeletable: the batch is %s", bt.id, state)
	if state != "purged" {
		return
	}
	value := bt.cpfs[r%uint64(len(bt.cpfs))]
	body, _ := json.Marshal(map[string]string{"cpf": value})
	code, raw := w.call("POST", "/admin/erasures", body)
	done := time.Now()
	var row admin.ErasureView
	if code != http.StatusOK || json.Unmarshal(raw, &row) != nil {
		w.violate("I2", "", "", "the erasure of a valid CPF answered %d: %s", code, oneLine(string(raw), 120))
		return
	}
	w.noteErasure(value, row, done, "api, its export's purge committed, its results undeletable")
}

// unlockExports makes deletable again every file lockedPurge locked,
// wherever a swap moved it.
func (w *world) unlockExports() {
	_ = filepath.WalkDir(w.s.exports, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isImmutable(path) {
			_ = setImmutable(path, false)
		}
		return nil
	})
}

// pendingCandidate picks the CPF found in the most batches with a pending
// delivery to sink (ties broken by r); "" when there is none.
func (w *world) pendingCandidate(sink string, r uint64) string {
	count := map[string]int{}
	for _, d := range w.deliveries("pending") {
		bt := w.byID[d.BatchID]
		if d.Sink != sink || bt == nil {
			continue
		}
		if st, _ := w.s.sim.Status(bt.simID); st == lookupsim.StatusFailed {
			continue
		}
		for _, c := range bt.cpfs {
			count[c]++
		}
	}
	var best []string
	for _, c := range sortedKeys(count) {
		switch {
		case len(best) == 0 || count[c] > count[best[0]]:
			best = []string{c}
		case count[c] == count[best[0]]:
			best = append(best, c)
		}
	}
	if len(best) == 0 {
		return ""
	}
	return best[r%uint64(len(best))]
}

// eraseCandidate picks a CPF of an acknowledged batch whose status gives
// items, so that it is in an export (or was, or will be); one time in two
// from the last three such batches, whose deliveries may be going.
func (w *world) eraseCandidate(a, b uint64) string {
	var cands []*ilBatch
	for _, bt := range w.acked() {
		if st, _ := w.s.sim.Status(bt.simID); st != lookupsim.StatusFailed {
			cands = append(cands, bt)
		}
	}
	if a%2 == 0 {
		cands = cands[max(0, len(cands)-3):]
	}
	bt := pickOf(cands, a/2)
	if bt == nil {
		return ""
	}
	return bt.cpfs[b%uint64(len(bt.cpfs))]
}

func (w *world) erasureList() []admin.ErasureView {
	code, body := w.call("GET", "/admin/erasures", nil)
	var list struct {
		Items []admin.ErasureView `json:"items"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil {
		w.fatalf("GET /admin/erasures: %d %s", code, oneLine(string(body), 200))
	}
	return list.Items
}
