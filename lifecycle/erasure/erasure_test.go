package erasure

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// Synthetic, valid CPFs: A is erased, B is not.
const (
	cpfA      = "52998224725"
	cpfAForm  = "529.982.247-25"
	cpfB      = "11144477735"
	itemA     = `{"cpf":"529.982.247-25","name":"Ana"}`
	itemADigs = `{"cpf":"52998224725","name":"Ana"}`
	itemB     = `{"cpf":"11144477735","name":"Bia"}`
)

type world struct {
	st   *store.Store
	dir  *export.Dir
	logs *bytes.Buffer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetSinks([]string{"http", "kafka"})
	dir, err := export.New(filepath.Join(t.TempDir(), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	return &world{st: st, dir: dir, logs: &bytes.Buffer{}}
}

func (w *world) service(t *testing.T, ex Exports) *Service {
	t.Helper()
	if ex == nil {
		ex = w.dir
	}
	s, err := New(Options{Store: w.st, Exports: ex, CPFField: "cpf", Logger: zerolog.New(w.logs), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// export records batch id, publishes items as its export and finishes it.
func (w *world) export(t *testing.T, id string, items ...string) {
	t.Helper()
	n := int64(len(items))
	if _, err := w.st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", TotalFound: &n,
		ReceivedAt: t0, Source: store.SourceWebhook, Raw: []byte(`{}`), Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	b, _, err := w.st.Lease(t0)
	if err != nil || b == nil || b.ID != id {
		t.Fatalf("Lease = %v, %v", b, err)
	}
	raw := make([]json.RawMessage, len(items))
	for i, s := range items {
		raw[i] = json.RawMessage(s)
	}
	size, err := w.dir.Append(id, 0, raw)
	if err != nil {
		t.Fatal(err)
	}
	b.Checkpoint = store.Checkpoint{Done: true, Items: n, Pages: 1, StagedBytes: size}
	path, _, err := w.dir.Publish(*b, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.st.Finish(id, store.StateExported, path, "", 0, t0); err != nil {
		t.Fatal(err)
	}
}

func (w *world) results(t *testing.T, id string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dir.Path(id), export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := export.Verify(w.dir.Path(id)); !ok || err != nil {
		t.Fatalf("export %s no longer matches its manifest: %v", id, err)
	}
	return string(data)
}

func TestEraseAcrossExportsChunksAndBodies(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB, itemADigs)
	w.export(t, "b-2", itemB)
	// http delivered b-1; kafka sent one part of it and is retrying.
	d, _, err := w.st.NextDelivery("http", t0, func(string) bool { return false })
	if err != nil || d == nil || d.BatchID != "b-1" {
		t.Fatalf("NextDelivery http = %+v, %v", d, err)
	}
	if _, err := w.st.Delivered("b-1", "http", d.Generation, t0, false); err != nil {
		t.Fatal(err)
	}
	k, _, _ := w.st.NextDelivery("kafka", t0, func(string) bool { return false })
	if err := w.st.MarkParts("b-1", "kafka", k.Generation, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.AddSubmission(store.Submission{ID: "s1", Valid: 2}, [][]string{{cpfA, cpfB}}, t0); err != nil {
		t.Fatal(err)
	}
	if err := w.st.Quarantine(store.Quarantined{ID: "q1", Reason: "bad", Raw: []byte(`{"x":"` + cpfAForm + `"}`)}); err != nil {
		t.Fatal(err)
	}
	svc := w.service(t, nil)
	e, err := svc.Erase(cpfAForm)
	if err != nil {
		t.Fatal(err)
	}
	if e.State != store.ErasureDone || !e.Touched() || e.Previous != "" {
		t.Fatalf("erasure = %+v", e)
	}
	wantSinks := []store.SinkReceipt{{Sink: "http", Received: store.ReceivedDelivered}, {Sink: "kafka", Received: store.ReceivedMaybe}}
	if len(e.Batches) != 1 || e.Batches[0].BatchID != "b-1" || e.Batches[0].Items != 2 || !slices.Equal(e.Batches[0].Sinks, wantSinks) {
		t.Fatalf("batches = %+v; want b-1, 2 items, sinks %+v", e.Batches, wantSinks)
	}
	if len(e.Chunks) != 1 || e.Chunks[0].CPFs != 1 || len(e.Bodies) != 1 || e.Bodies[0].ID != "q1" {
		t.Fatalf("chunks %+v bodies %+v", e.Chunks, e.Bodies)
	}
	if got := w.results(t, "b-1"); got != itemB+"\n" {
		t.Fatalf("b-1 after erasure = %q", got)
	}
	if got := w.results(t, "b-2"); got != itemB+"\n" {
		t.Fatalf("b-2 changed: %q", got)
	}
	logs := w.logs.String()
	if !strings.Contains(logs, `"event":"erasure_started"`) || !strings.Contains(logs, `"event":"erasure_done"`) {
		t.Fatalf("logs = %s", logs)
	}
	if strings.Contains(logs, cpfA) || strings.Contains(logs, "982.247") || strings.Contains(logs, e.Hash) {
		t.Fatalf("the logs hold the CPF or its hash: %s", logs)
	}

	// Again: nothing left, says so, names the first.
	again, err := svc.Erase(cpfA)
	if err != nil || again.Touched() || again.Previous != e.ID || again.ID == e.ID {
		t.Fatalf("second erasure = %+v, %v", again, err)
	}
	all, _ := svc.List()
	if len(all) != 2 {
		t.Fatalf("List = %+v", all)
	}
}

func TestAnInvalidCPFIsRefusedWithoutEchoingIt(t *testing.T) {
	w := newWorld(t)
	svc := w.service(t, nil)
	for _, bad := range []string{"529.982.247-26", "5299822472", "abc"} {
		_, err := svc.Erase(bad)
		if !errors.Is(err, ErrInvalidCPF) || strings.Contains(err.Error(), bad) {
			t.Fatalf("Erase(%q) = %v; want ErrInvalidCPF not holding the value", bad, err)
		}
	}
	if all, _ := svc.List(); len(all) != 0 {
		t.Fatalf("an invalid CPF was recorded: %+v", all)
	}
}

// crashOn makes the export rewrite of one batch crash (panic), or fail
// with an error when fail is set.
type crashOn struct {
	dir  *export.Dir
	id   string
	fail bool
}

type crash struct{}

func (f crashOn) Erase(id string, base int, field string, match func(string) bool, settle func(int64, int) error) (int64, int, bool, error) {
	switch {
	case id == f.id && f.fail:
		return 0, 0, false, errors.New("injected: this export cannot be rewritten")
	case id == f.id:
		panic(crash{})
	}
	return f.dir.Erase(id, base, field, match, settle)
}

func (f crashOn) Purge(id string) error  { return f.dir.Purge(id) }
func (f crashOn) Remove(id string) error { return f.dir.Remove(id) }

func TestAnInterruptedErasureIsResumedAtStart(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	w.export(t, "b-2", itemADigs)
	// List goes newest first: b-2 is rewritten, then the daemon dies on b-1.
	func() {
		defer func() {
			if r := recover(); r != (crash{}) {
				t.Fatalf("recovered %v, want the injected crash", r)
			}
		}()
		w.service(t, crashOn{dir: w.dir, id: "b-1"}).Erase(cpfA)
	}()
	pending, _ := w.st.Erasures(true)
	if len(pending) != 1 || len(pending[0].Batches) != 1 || pending[0].Batches[0].BatchID != "b-2" {
		t.Fatalf("after the interruption: %+v; want pending with b-2 noted", pending)
	}
	if !strings.Contains(w.results(t, "b-1"), "Ana") {
		t.Fatal("b-1 was rewritten before the injected failure")
	}
	done, err := w.service(t, nil).Resume()
	if err != nil || len(done) != 1 || done[0].State != store.ErasureDone {
		t.Fatalf("Resume = %+v, %v", done, err)
	}
	ids := []string{done[0].Batches[0].BatchID, done[0].Batches[1].BatchID}
	if len(done[0].Batches) != 2 || !slices.Contains(ids, "b-1") || done[0].Batches[0].Items+done[0].Batches[1].Items != 2 {
		t.Fatalf("resumed record = %+v", done[0].Batches)
	}
	if got := w.results(t, "b-1"); got != itemB+"\n" {
		t.Fatalf("b-1 after resume = %q", got)
	}
	if left, _ := w.st.Erasures(true); len(left) != 0 {
		t.Fatalf("still pending: %+v", left)
	}
}

func TestAnErasureRecordedBeforeAnyFileIsTouchedIsResumed(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	svc := w.service(t, nil)
	// The crash came right after the record: only the keyed hash is left.
	key, _ := w.st.ErasureKey()
	if _, _, err := w.st.BeginErasure(keyed(key, cpfA), t0); err != nil {
		t.Fatal(err)
	}
	done, err := svc.Resume()
	if err != nil || len(done) != 1 || len(done[0].Batches) != 1 || done[0].Batches[0].Items != 1 {
		t.Fatalf("Resume = %+v, %v", done, err)
	}
	if got := w.results(t, "b-1"); got != itemB+"\n" {
		t.Fatalf("b-1 = %q", got)
	}
}

func TestAPublishAfterTheErasureLeavesTheCPFOut(t *testing.T) {
	w := newWorld(t)
	w.dir.SetErasures("cpf", w.st.ErasureMatcher)
	if _, err := w.service(t, nil).Erase(cpfA); err != nil {
		t.Fatal(err)
	}
	w.export(t, "b-late", itemADigs, itemB) // staged before, published after
	if got := w.results(t, "b-late"); got != itemB+"\n" {
		t.Fatalf("an export published after the erasure holds the CPF: %q", got)
	}
}

func keyed(key []byte, digits string) string { return cpf.KeyedHash(key, digits) }

func TestAnExportThatCannotBeRewrittenIsListedAndTheRestGoesOn(t *testing.T) {
	w := newWorld(t)
	w.export(t, "b-1", itemA, itemB)
	w.export(t, "b-2", itemADigs)
	e, err := w.service(t, crashOn{dir: w.dir, id: "b-1", fail: true}).Erase(cpfA)
	if err != nil || e.State != store.ErasureDone || !slices.Equal(e.Unrewritten, []string{"b-1"}) ||
		len(e.Batches) != 1 || e.Batches[0].BatchID != "b-2" {
		t.Fatalf("erasure = %+v, %v; want b-2 rewritten and b-1 listed as unrewritten", e, err)
	}
	if !strings.Contains(w.logs.String(), `"event":"erasure_export_failed"`) {
		t.Fatalf("logs = %s", w.logs.String())
	}
	// Erasing again once it is fixed finishes the job.
	again, err := w.service(t, nil).Erase(cpfA)
	if err != nil || len(again.Unrewritten) != 0 || len(again.Batches) != 1 || again.Batches[0].BatchID != "b-1" {
		t.Fatalf("second erasure = %+v, %v", again, err)
	}
}
