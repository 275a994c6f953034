package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// TestExportPurgedAfterRetentionStaysKnown runs the real binary with a
// 2 s EXPORT_RETENTION: the export is deleted by the purger, the batch is
// listed as purged, and a replay of its notification is a duplicate.
func TestExportPurgedAfterRetentionStaysKnown(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_EXPORT_RETENTION"] = "2s"
	s.env["BATCHHOOK_PURGE_INTERVAL"] = "200ms"
	d := startDaemon(t, s.addr, s.env)
	cpfs := lookupsim.SampleCPFs(60, 7)
	id, err := s.sim.Submit(cpfs)
	if err != nil {
		t.Fatal(err)
	}
	m := s.waitExport(t, id, d, 20*time.Second)
	dir := filepath.Join(s.exports, id)
	deadline := time.Now().Add(waitBound)
	for {
		if _, err := os.Lstat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("export %s still there %s after a 2 s retention\n%s", dir, waitBound, d.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The purger deletes the files, records it, counts it, then logs
	// export_purged: the line says the purge is complete.
	waitLogLine(t, d, `"event":"export_purged"`, `"batch_id":"`+id+`"`)
	out, errOut, code := cli(t, d, "", "batches", "list", "--state", "purged")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "purged") {
		t.Fatalf("batches list --state purged = %d\n%s%s", code, out, errOut)
	}
	out, _, code = cli(t, d, "", "batches", "show", id)
	if code != 0 || !strings.Contains(out, "export purged:") || !strings.Contains(out, m.SHA256) {
		t.Fatalf("batches show of a purged batch lacks its tombstone (manifest sha256 %s):\n%s", m.SHA256, out)
	}
	raw, _ := s.sim.Notification(id)
	if code, reply := postSigned(t, s.addr, raw, 5); code != 200 || reply["result"] != "duplicate" {
		t.Fatalf("replay of a purged batch: %d %v; want a duplicate", code, reply)
	}
	if st, body := get(t, d.admin+"/metrics", ""); st != 200 || !strings.Contains(body, `batchhook_purged_total{kind="export"} 1`) ||
		!strings.Contains(body, `batchhook_batches{state="purged"} 1`) {
		t.Fatalf("metrics after the purge (%d) lack the purge:\n%s", st, body)
	}
	logs := d.out.String()
	if !strings.Contains(logs, `"event":"export_purged"`) || !strings.Contains(logs, `"batch_id":"`+id+`"`) {
		t.Fatalf("no export_purged line for %s:\n%s", id, logs)
	}
	for _, c := range cpfs {
		if strings.Contains(logs, c) {
			t.Fatalf("logs contain a CPF")
		}
	}
	// The provider still keeps the results: a refetch brings the export back.
	if out, errOut, code := cli(t, d, "", "batches", "refetch", id); code != 0 {
		t.Fatalf("refetch of a purged batch = %d\n%s%s", code, out, errOut)
	}
	if again := s.waitExport(t, id, d, 20*time.Second); again.SHA256 != m.SHA256 {
		t.Fatalf("refetched export sha256 %s, want %s", again.SHA256, m.SHA256)
	}
	d.stop(t)
}

// TestStartFinishesAPurgeACrashInterrupted plays a crash between the
// tombstone's commit and the removal of the files: the purged state is
// committed while the export is still on disk. The real binary's pass at
// start deletes it.
func TestStartFinishesAPurgeACrashInterrupted(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	data := s.env["BATCHHOOK_DATA_DIR"]
	st, err := store.Open(data, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := export.New(s.exports)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: "b_crashed", Status: "completed",
		ReceivedAt: at, Source: store.SourceWebhook, Raw: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Lease(at); err != nil {
		t.Fatal(err)
	}
	size, err := dir.Append("b_crashed", 0, []json.RawMessage{json.RawMessage(`{"cpf":"52998224725"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Checkpoint("b_crashed", store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: size}, at); err != nil {
		t.Fatal(err)
	}
	b, _ := st.Get("b_crashed")
	path, _, err := dir.Publish(*b, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Finish("b_crashed", store.StateExported, path, "", 0, at); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PurgeExport("b_crashed", store.ExportPurge{ExportedAt: at}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st.Close() // the "crash": the files were never removed
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, s.addr, s.env) // retention at its default: only the interrupted removal is due
	deadline := time.Now().Add(waitBound)
	for {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start did not finish the interrupted purge of %s\n%s", path, d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.stop(t)
	st, err = store.Open(data, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ids, err := st.FileRemovals(); err != nil || len(ids) != 0 {
		t.Fatalf("removals left after the start: %v %v", ids, err)
	}
}
