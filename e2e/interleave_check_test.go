package e2e

// TestInterleave's end: every sink recovered, the daemon quiet, then the
// invariants. I1 (what each sink holds is the export) and I4 (one body per
// message id) are in interleave_view_test.go; here:
//   - I2: no erased CPF in any file under DATA_DIR or EXPORT_DIR (checked
//     right after each erasure too), except in an export the erasure
//     listed as unrewritten; no message a sink received after the erasure
//     was done holds the CPF (but a part the erasure cut on the wire, read
//     within inFlightGrace, from a sink the erasure lists); no daemon log
//     holds any CPF;
//   - I3: no delivery ends failed (every export here is valid);
//   - I5: every export directory matches its manifest, belongs to an
//     exported batch, and .partial is empty;
//   - I6: every batch the daemon acknowledged ends exported or purged.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// violation is one broken invariant, said briefly (never a whole export).
type violation struct {
	inv, batch, sink, msg string
}

func (w *world) violate(inv, batch, sink, format string, args ...any) {
	v := violation{inv, batch, sink, fmt.Sprintf(format, args...)}
	w.viol = append(w.viol, v)
	w.logf("VIOLATION %s batch=%s sink=%s: %s", inv, batch, sink, v.msg)
}

// finish recovers every sink, lets the daemon finish its work, and
// restarts it with retention off, so that no purge moves the files while
// they are checked.
func (w *world) finish() {
	w.mode.Store(httpAccept)
	if !w.nats.running() {
		w.nats.start()
	}
	if err := w.s.sim.SetFaults(lookupsim.Faults{DropNotifications: true}); err != nil {
		w.t.Fatal(err)
	}
	w.logf("sinks and provider recovered")
	w.quiesce()
	w.d.stop(w.t)
	w.s.env["BATCHHOOK_EXPORT_RETENTION"], w.s.env["BATCHHOOK_RECORD_RETENTION"] = "0", "0"
	w.startDaemon()
	w.logf("restarted with retention off for the checks")
	w.quiesce()
}

// quiesce waits until no delivery is pending, no batch is queued or
// fetching and no erasure is pending.
func (w *world) quiesce() {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		why := w.busy()
		if why == "" {
			w.logf("quiet")
			return
		}
		if time.Now().After(deadline) {
			if w.pc != nil {
				w.pcStuck()
			}
			w.fatalf("the daemon did not become quiet in 3 minutes: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *world) busy() string {
	if ds := w.deliveries("pending"); len(ds) > 0 {
		d := ds[0]
		return fmt.Sprintf("%d deliveries pending, e.g. %s to %s (attempt %d, %s: %s)", len(ds), d.BatchID, d.Sink, d.Attempts, d.ErrorKind, d.LastError)
	}
	for _, st := range []string{"queued", "fetching"} {
		if bs := w.listBatches(st); len(bs) > 0 {
			return fmt.Sprintf("%d batches %s, e.g. %s (%s)", len(bs), st, bs[0].ID, bs[0].LastError)
		}
	}
	for _, e := range w.erasureList() {
		if e.State != "done" {
			return "erasure " + e.ID + " is " + e.State
		}
	}
	return ""
}

func (w *world) deliveries(state string) []admin.DeliveryView {
	var all []admin.DeliveryView
	for cursor := ""; ; {
		code, body := w.call("GET", "/admin/deliveries?limit=1000&state="+state+"&cursor="+url.QueryEscape(cursor), nil)
		var page struct {
			Items      []admin.DeliveryView `json:"items"`
			NextCursor string               `json:"next_cursor"`
		}
		if code != 200 || json.Unmarshal(body, &page) != nil {
			w.fatalf("GET /admin/deliveries?state=%s: %d %s", state, code, oneLine(string(body), 200))
		}
		all = append(all, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return all
		}
	}
}

func (w *world) listBatches(state string) []admin.BatchView {
	var all []admin.BatchView
	for cursor := ""; ; {
		code, body := w.call("GET", "/admin/batches?limit=1000&state="+state+"&cursor="+url.QueryEscape(cursor), nil)
		var page struct {
			Items      []admin.BatchView `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		if code != 200 || json.Unmarshal(body, &page) != nil {
			w.fatalf("GET /admin/batches?state=%s: %d %s", state, code, oneLine(string(body), 200))
		}
		all = append(all, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return all
		}
	}
}

// check reads the daemon's view of every batch, the export directory and
// what each sink received, and checks the invariants.
func (w *world) check() {
	rows := map[string]admin.BatchView{}
	for _, b := range w.listBatches("") {
		code, body := w.call("GET", batchPath(b.ID), nil)
		var row admin.BatchView
		if code != 200 || json.Unmarshal(body, &row) != nil {
			w.fatalf("GET %s: %d %s", batchPath(b.ID), code, oneLine(string(body), 200))
		}
		rows[b.ID] = row
	}
	for _, bt := range w.acked() { // I6
		switch row, ok := rows[bt.id]; {
		case !ok:
			w.violate("I6", bt.id, "", "acknowledged, but the daemon does not know the batch")
		case row.State != "exported" && row.State != "purged":
			w.violate("I6", bt.id, "", "acknowledged, but it ended %s (%s: %s)", row.State, row.ErrorKind, row.LastError)
		}
	}
	for _, id := range sortedKeys(rows) { // I3
		for _, d := range rows[id].Deliveries {
			if d.State == "failed" {
				w.violate("I3", id, d.Sink, "the delivery of version %d ended failed after %d attempts (%s: %s)", d.Version, d.Attempts, d.ErrorKind, d.LastError)
			}
		}
	}
	disk := w.checkExportDir(rows)
	httpMsgs, stream := w.recv.Messages(), w.streamNow()
	w.checkSinks(rows, disk, httpMsgs, stream)
	w.checkIDs(httpMsgs, append(stream, w.tap.messages()...))
	w.checkErasedEnd(httpMsgs, stream)
}

// checkExportDir is I5; it returns the exports on disk by batch id.
func (w *world) checkExportDir(rows map[string]admin.BatchView) map[string]*diskExport {
	out := map[string]*diskExport{}
	entries, err := os.ReadDir(w.s.exports)
	if err != nil {
		w.fatalf("read EXPORT_DIR: %v", err)
	}
	for _, e := range entries {
		name, dir := e.Name(), filepath.Join(w.s.exports, e.Name())
		if name == "payments" {
			continue // the payments day files (no batch may have that id)
		}
		if name == ".partial" {
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				var names []string
				for _, l := range left {
					names = append(names, l.Name())
				}
				w.violate("I5", "", "", "EXPORT_DIR/.partial is not empty once the daemon is quiet: %v", names)
			}
			continue
		}
		if ok, err := export.Verify(dir); !ok {
			w.violate("I5", name, "", "the export does not match its manifest (%v)", err)
			continue
		}
		row, known := rows[name]
		if !known || row.State != "exported" || row.ExportRemoved {
			w.violate("I5", name, "", "an export directory is left for a batch that is %q (export_removed=%v)", row.State, row.ExportRemoved)
			continue
		}
		x, err := readExport(dir)
		if err != nil {
			w.fatalf("read export %s: %v", name, err)
		}
		out[name] = x
	}
	for _, id := range sortedKeys(rows) {
		row := rows[id]
		if row.State != "exported" {
			continue
		}
		switch {
		case !row.ExportRemoved && out[id] == nil:
			w.violate("I5", id, "", "the batch is exported but EXPORT_DIR holds no export for it")
		case row.ExportRemoved && !w.cfg.withFile:
		case row.ExportRemoved:
			w.violate("I5", id, "", "the export was removed although file is a configured sink")
		case !w.cfg.withFile && allDelivered(row):
			w.violate("I5", id, "", "every sink has the export and file is not a sink, yet it was not removed")
		}
	}
	return out
}

func allDelivered(row admin.BatchView) bool {
	for _, d := range row.Deliveries {
		if d.State != "delivered" {
			return false
		}
	}
	return len(row.Deliveries) > 0
}

// checkErasedNow is I2 right after an erasure: no file holds the CPF but
// the staged pages of a batch being fetched (its publish leaves the CPF
// out) and the exports the erasure could not rewrite.
func (w *world) checkErasedNow(e ilErasure) {
	for _, hit := range grepLive(w.s.env["BATCHHOOK_DATA_DIR"], cpfNeedles(e.cpf)) {
		rel, _ := filepath.Rel(w.s.exports, hit)
		first, rest, _ := strings.Cut(rel, string(filepath.Separator))
		if first == ".partial" && !strings.HasPrefix(rest, ".") {
			continue
		}
		first = w.exportOf(hit)
		if slices.Contains(e.unrewritten, first) {
			continue
		}
		w.violate("I2", first, "", "right after erasure %s was done, the erased CPF %s is in %s", e.id, cpf.Mask(e.cpf), w.dataRel(hit))
	}
}

// inFlightGrace is how long after an erasure returned a part it cut short
// may still reach the receiver: bytes already sent, read by a loaded
// receiver late. The sink must be listed by the erasure for it to count.
const inFlightGrace = 2 * time.Second

// checkErasedEnd is I2 once the daemon is quiet.
func (w *world) checkErasedEnd(httpMsgs []demo.Message, stream []*rawMsg) {
	for _, c := range sortedKeys(w.erased) {
		for _, hit := range grepTree(w.t, w.s.env["BATCHHOOK_DATA_DIR"], cpfNeedles(c)...) {
			if batch := w.exportOf(hit); !w.unrewritten(c, batch) {
				w.violate("I2", batch, "", "the erased CPF %s is still in %s", cpf.Mask(c), w.dataRel(hit))
			}
		}
	}
	type key struct{ erasure, batch, sink string }
	seen := map[key]bool{}
	late := func(e ilErasure, batch, sink, what string, at time.Time) {
		// A part already on the wire when the change cut its attempt may
		// still be read by the receiver a moment after the erasure
		// returned: that is allowed only when the erasure lists the sink
		// as one that may have the data, and only just after.
		if e.listed[batch+" "+sink] && at.Sub(e.done) < inFlightGrace {
			return
		}
		if k := (key{e.id, batch, sink}); !seen[k] && !w.unrewritten(e.cpf, batch) {
			seen[k] = true
			w.violate("I2", batch, sink, "%s, received %s after erasure %s was done, holds the erased CPF %s",
				what, at.Sub(e.done).Round(time.Millisecond), e.id, cpf.Mask(e.cpf))
		}
	}
	for _, e := range w.erasures {
		forms := cpfNeedles(e.cpf)[:2]
		for _, m := range httpMsgs {
			if m.Err == "" && m.At.After(e.done) && holdsAny(m.Body, forms) {
				p, _ := httpsink.DecodePart(m.Body)
				late(e, p.Data.BatchID, "http", fmt.Sprintf("message %s (part %d, answered %d)", m.ID, p.Data.Part, m.Status), m.At)
			}
		}
		for _, m := range stream {
			if m.Time.After(e.done) && holdsAny(m.Data, forms) {
				late(e, m.Header.Get("Batchhook-Batch-Id"), "nats", "message "+m.Header.Get("Nats-Msg-Id"), m.Time)
			}
		}
	}
	for i, p := range w.procs {
		logs := p.out.String()
		for _, c := range w.pool {
			if strings.Contains(logs, c) {
				w.violate("I2", "", "", "the log of daemon run %d holds a CPF", i+1)
				break
			}
		}
	}
}

// unrewritten reports whether an erasure of c listed batch as an export
// it could not rewrite.
func (w *world) unrewritten(c, batch string) bool {
	for _, e := range w.erasures {
		if e.cpf == c && slices.Contains(e.unrewritten, batch) {
			return true
		}
	}
	return false
}

// exportOf names the batch whose export holds path: its published
// directory, or its copy set aside or rewritten in .partial (".old.<id>",
// ".erase.<id>"); "" for the database and a batch's staging.
func (w *world) exportOf(path string) string {
	rel, err := filepath.Rel(w.s.exports, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ""
	}
	first, rest, _ := strings.Cut(rel, string(filepath.Separator))
	if first != ".partial" {
		return first
	}
	name, _, _ := strings.Cut(rest, string(filepath.Separator))
	for _, prefix := range []string{".old.", ".erase."} {
		if id, ok := strings.CutPrefix(name, prefix); ok {
			return id
		}
	}
	return ""
}

func (w *world) dataRel(path string) string {
	rel, err := filepath.Rel(w.s.env["BATCHHOOK_DATA_DIR"], path)
	if err != nil {
		return path
	}
	return "DATA_DIR/" + rel
}

// cpfNeedles are a CPF's two forms, then their Base64 forms.
func cpfNeedles(c string) []string {
	return withBase64(c, c[:3]+"."+c[3:6]+"."+c[6:9]+"-"+c[9:])
}

func holdsAny(data []byte, needles []string) bool {
	for _, n := range needles {
		if strings.Contains(string(data), n) {
			return true
		}
	}
	return false
}

// grepLive is grepTree for a tree the daemon is changing: a file or
// directory that goes away while it is read is skipped.
func grepLive(root string, needles []string) []string {
	var hits []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if holdsAny(data, needles) {
			hits = append(hits, path)
		}
		return nil
	})
	return hits
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
