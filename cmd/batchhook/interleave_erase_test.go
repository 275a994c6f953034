package main

// TestInterleave's erasures: plain ones through the admin API or the CLI,
// and one cut by a SIGKILL. Each is checked at once for the CPF left in a
// file (checkErasedNow).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

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
	var row erasureRow
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
	var row erasureRow
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

func (w *world) noteErasure(value string, row erasureRow, done time.Time, how string) {
	w.erasures = append(w.erasures, ilErasure{cpf: value, id: row.ID, done: done, unrewritten: row.Unrewritten})
	w.erased[value] = true
	var parts []string
	mid := false
	for _, bt := range row.Batches {
		var sinks []string
		for _, s := range bt.Sinks {
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

func (w *world) erasureList() []erasureRow {
	code, body := w.call("GET", "/admin/erasures", nil)
	var list struct {
		Items []erasureRow `json:"items"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil {
		w.fatalf("GET /admin/erasures: %d %s", code, oneLine(string(body), 200))
	}
	return list.Items
}
