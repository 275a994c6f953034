package e2e

// TestPowerLoss's checks after every cut, P1 to P6 (their words are in
// powerloss_steady_e2e_test.go's header). They read the daemon through
// its admin API and the files on the new mount with plain reads: the test
// process never maps a file of the mount (internal/powerloss's doc says
// why).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/export"
)

// restartAfterCut starts the daemon on what survived the cut (P5: it
// must start, serve and become ready) and checks how it says the previous
// run ended: unclean when the power went under a running daemon; after a
// clean stop and an offline command, nothing, or (a restored backup
// carries the run record of the daemon it was taken from) unclean.
func (w *world) restartAfterCut(wasRunning bool) {
	w.startDaemon() // fails the seed, with the daemon's output, if it does not start
	deadline := time.Now().Add(waitBound)
	for {
		code, body := w.call("GET", "/readyz", nil)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			w.violate("P5", "", "", "/readyz after the cut: %d %s (waited %s)", code, oneLine(string(body), 160), waitBound)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lines := previousRunLines(w.t, w.d)
	var reasons []string
	for _, l := range lines {
		reasons = append(reasons, fmt.Sprint(l["reason"]))
	}
	unclean := len(lines) == 1 && strings.Contains(reasons[0], "unclean exit")
	switch {
	case wasRunning && !unclean:
		w.violate("P5", "", "", "the restart after a cut under the running daemon logged %d previous_run_failed lines %q, want one saying unclean exit", len(lines), reasons)
	case !wasRunning && len(lines) > 0 && !unclean:
		w.violate("P5", "", "", "the restart after a clean stop and an offline command logged previous_run_failed %q", reasons)
	}
	w.logf("restarted after the cut: ready; previous run: %q", reasons)
}

// checkAfterCut is P1, P2, P3 and P4 on the restarted daemon; delivered
// are the deliveries the daemon reported delivered before the cut.
func (w *world) checkAfterCut(delivered []admin.DeliveryView) {
	w.pc.fig.checks++
	before := len(w.viol)
	rows := map[string]admin.BatchView{}
	for _, b := range w.listBatches("") {
		rows[b.ID] = b
	}
	for _, bt := range w.acked() { // P1
		if _, ok := rows[bt.id]; !ok {
			w.violate("P1", bt.id, "", "answered 2xx before the cut, unknown to the daemon after it")
		}
	}
	for _, id := range sortedKeys(rows) { // P2
		if row := rows[id]; row.State == "exported" && !row.ExportRemoved {
			w.checkExportWhole(id)
		}
	}
	for _, d := range delivered { // P3
		w.checkDeliveredKept(d)
	}
	w.pcCheckPayments() // P4
	w.logf("checked after the cut: %d batches known, %d deliveries reported delivered before it, %d payment events acknowledged; %d violations",
		len(rows), len(delivered), len(w.pc.payAcked), len(w.viol)-before)
}

// checkExportWhole verifies an exported batch's export against its
// manifest. A refetch, an erasure or the purger may be replacing or
// removing it as it is read: a failure counts only if the batch is still
// exported with its export kept and the export fails again.
func (w *world) checkExportWhole(id string) {
	dir := filepath.Join(w.s.exports, id)
	ok, err := export.Verify(dir)
	for try := 0; !ok && try < 2; try++ {
		row, known := w.batchRow(id)
		if !known || row.State != "exported" || row.ExportRemoved {
			return
		}
		if try == 1 {
			w.violate("P2", id, "", "exported (version %d), but its export does not match its manifest: %v", row.ExportVersion, err)
			return
		}
		time.Sleep(200 * time.Millisecond) // lets a replacement seen part-way finish; the check reads again, it does not wait for a moment
		ok, err = export.Verify(dir)
	}
}

// checkDeliveredKept is P3 for one delivery reported delivered before the
// cut.
func (w *world) checkDeliveredKept(d admin.DeliveryView) {
	row, known := w.batchRow(d.BatchID)
	if !known {
		w.violate("P3", d.BatchID, d.Sink, "version %d was reported delivered before the cut; the daemon no longer knows the batch", d.Version)
		return
	}
	if row.State == "purged" || row.ExportRemoved {
		return // the purger's, or (file not a sink) every sink had it
	}
	i := slices.IndexFunc(row.Deliveries, func(x admin.DeliveryView) bool { return x.Sink == d.Sink })
	if i < 0 {
		w.violate("P3", d.BatchID, d.Sink, "version %d was reported delivered before the cut; the batch (%s) has no delivery to the sink after it", d.Version, row.State)
		return
	}
	cur := row.Deliveries[i]
	switch {
	case cur.State == "delivered" && cur.Version >= d.Version:
	case cur.Version > d.Version: // a refetch or an erasure made a newer version, on its way
	default:
		w.violate("P3", d.BatchID, d.Sink, "version %d was reported delivered before the cut; after it the delivery is %s at version %d", d.Version, cur.State, cur.Version)
	}
	if row.State != "exported" {
		return // being fetched again (a refetch): its export is replaced when it is done
	}
	m, err := os.ReadFile(filepath.Join(w.s.exports, d.BatchID, export.ManifestFile))
	if err != nil {
		if again, ok := w.batchRow(d.BatchID); ok && (again.State != "exported" || again.ExportRemoved) {
			return
		}
		w.violate("P3", d.BatchID, d.Sink, "version %d was reported delivered before the cut; its export is gone after it (%v)", d.Version, err)
		return
	}
	if v := exportVersion(m, row.ExportVersion); v < d.Version {
		w.violate("P3", d.BatchID, d.Sink, "version %d was reported delivered before the cut; the export on disk is version %d after it", d.Version, v)
	}
}

// batchRow reads one batch through the admin API; false when the daemon
// does not know it.
func (w *world) batchRow(id string) (admin.BatchView, bool) {
	code, body := w.call("GET", batchPath(id), nil)
	var row admin.BatchView
	switch {
	case code == 404:
		return row, false
	case code != 200 || json.Unmarshal(body, &row) != nil:
		w.fatalf("GET %s: %d %s", batchPath(id), code, oneLine(string(body), 200))
	}
	return row, true
}

// pcCheckPayments is P4: it waits until every payment event answered 2xx
// is in the day files (the file sink writes them after the answer), then
// checks each is there exactly once, under the seq it was answered with,
// and that no seq is there twice.
func (w *world) pcCheckPayments() {
	acked := w.pc.payAcked
	deadline := time.Now().Add(2 * waitBound)
	var lines []payLine
	var missing []string
	for {
		lines = w.dayLines()
		have := map[string]bool{}
		for _, l := range lines {
			have[payTxID(l.Body)] = true
		}
		missing = missing[:0]
		for _, tx := range sortedKeys(acked) {
			if !have[tx] {
				missing = append(missing, tx)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tx := range missing {
		w.violate("P4", "", "file", "payment event %s was answered 2xx (seq %v) and is not in the day files %s later", tx, acked[tx], 2*waitBound)
	}
	byTx, bySeq := map[string][]uint64{}, map[uint64]int{}
	for _, l := range lines {
		tx := payTxID(l.Body)
		byTx[tx] = append(byTx[tx], l.Seq)
		bySeq[l.Seq]++
	}
	for _, tx := range sortedKeys(byTx) {
		seqs := byTx[tx]
		if len(seqs) > 1 {
			w.violate("P4", "", "file", "payment event %s is in the day files %d times (seqs %v)", tx, len(seqs), seqs)
		}
		if want, ok := acked[tx]; ok && float64(seqs[0]) != want {
			w.violate("P4", "", "file", "payment event %s was answered with seq %v, the day files hold it under seq %d", tx, want, seqs[0])
		}
	}
	for seq, n := range bySeq {
		if n > 1 {
			w.violate("P4", "", "file", "seq %d is in the day files %d times", seq, n)
		}
	}
}

// dayLines reads the complete lines of the payments day files. A last
// line without its newline is not one yet: the file sink drops it before
// it appends again.
func (w *world) dayLines() []payLine {
	var out []payLine
	for _, name := range dayFiles(w.s.exports) {
		data, err := os.ReadFile(name)
		if err != nil {
			w.fatalf("read %s: %v", name, err)
		}
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		} else {
			data = nil
		}
		for _, raw := range splitLines(data) {
			var l payLine
			if err := json.Unmarshal(raw, &l); err != nil {
				w.violate("P4", "", "file", "%s holds a complete line that is not JSON (%v)", filepath.Base(name), err)
				continue
			}
			out = append(out, l)
		}
	}
	return out
}

// pcStuck records, for a daemon that does not become quiet, what the
// kernel still waits for from the power-loss file system (the connection's
// pending requests, with fusectl mounted) and the daemon's goroutines
// (SIGQUIT prints them to its log, then ends it).
func (w *world) pcStuck() {
	if names, _ := filepath.Glob("/sys/fs/fuse/connections/*/waiting"); len(names) > 0 {
		var waiting []string
		for _, name := range names {
			n, _ := os.ReadFile(name)
			waiting = append(waiting, filepath.Base(filepath.Dir(name))+"="+strings.TrimSpace(string(n)))
		}
		w.logf("FUSE requests waiting for an answer, by connection: %s", strings.Join(waiting, " "))
	}
	_ = w.d.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case err := <-w.d.done:
		w.d.done <- err
		w.logf("the daemon's goroutines are at the end of its log (SIGQUIT)")
	case <-time.After(waitBound):
		w.logf("the daemon did not end %s after SIGQUIT", waitBound)
	}
}
