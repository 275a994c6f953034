package purge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lifecycle/purge"
	"github.com/batchhook/batchhook/store"
)

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

const (
	day   = 24 * time.Hour
	month = 30 * day
)

// item holds a CPF: the test checks that no log line carries it.
const item = `{"cpf":"52998224725","name":"Maria"}`

type files struct{ d *export.Dir }

func (f files) Manifests(ids []string) ([]purge.Manifest, error) {
	ms, oks, err := f.d.Manifests(ids)
	if err != nil {
		return nil, err
	}
	out := make([]purge.Manifest, len(ms))
	for i, m := range ms {
		out[i] = purge.Manifest{SHA256: m.SHA256, Items: m.Items, ExportedAt: m.ExportedAt, OK: oks[i]}
	}
	return out, nil
}
func (f files) Purge(ids []string) []error { return f.d.PurgeAll(ids) }

// failingFiles plays a crash (or an I/O error) after the tombstone's commit
// and before the files are gone.
type failingFiles struct{ files }

func (failingFiles) Purge(ids []string) []error {
	errs := make([]error, len(ids))
	for i := range errs {
		errs[i] = errors.New("disk went away")
	}
	return errs
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) Purged(kind string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[kind] += n
}

type env struct {
	st   *store.Store
	dir  *export.Dir
	logs *syncBuffer
	obs  *counter
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir, err := export.New(filepath.Join(t.TempDir(), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, dir: dir, logs: &syncBuffer{}, obs: &counter{n: map[string]int{}}}
}

func (e *env) purger(t *testing.T, f purge.Files, exportRet, recordRet time.Duration) *purge.Purger {
	t.Helper()
	if f == nil {
		f = files{e.dir}
	}
	p, err := purge.New(purge.Options{Store: e.st, Files: f, Logger: zerolog.New(e.logs), Observer: e.obs,
		ExportRetention: exportRet, RecordRetention: recordRet, Interval: time.Hour, TxLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// export records, fetches (one real staged page) and publishes batch id at
// at, through the real store and export root.
func (e *env) export(t *testing.T, id string, at time.Time) { t.Helper(); e.exportLate(t, id, at, at) }

// exportLate records batch id at rec and exports it at at.
func (e *env) exportLate(t *testing.T, id string, rec, at time.Time) {
	t.Helper()
	n := int64(2)
	if _, err := e.st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", TotalRequested: &n,
		ReceivedAt: rec, Source: store.SourceWebhook, Raw: []byte(`{"batch_id":"` + id + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if b, _, err := e.st.Lease(at); err != nil || b == nil || b.ID != id {
		t.Fatalf("lease %s: %v %v", id, b, err)
	}
	size, err := e.dir.Append(id, 0, []json.RawMessage{json.RawMessage(item), json.RawMessage(item)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Checkpoint(id, store.Checkpoint{Done: true, Items: 2, Pages: 1, StagedBytes: size, Cursor: "c1"}, at); err != nil {
		t.Fatal(err)
	}
	b, _ := e.st.Get(id)
	path, _, err := e.dir.Publish(*b, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Finish(id, store.StateExported, path, "", 0, at); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestPassPurgesDueExportsAndWhatIsStagedForThem(t *testing.T) {
	e := newEnv(t)
	e.export(t, "old", t0)
	e.export(t, "young", t0.Add(20*day))
	e.export(t, "x1", t0)
	e.export(t, "x2", t0)
	e.exportLate(t, "slow", t0, t0.Add(20*day)) // an early record exported late: not due
	ms, _, _ := e.dir.Manifests([]string{"old"})
	m := ms[0]
	// Leftovers a crash could leave: a staged copy and an old copy aside.
	if _, err := e.dir.Append("old", 0, []json.RawMessage{json.RawMessage(item)}); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(e.dir.Root(), ".partial", ".old.old")
	if err := os.MkdirAll(aside, 0o700); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(month + time.Hour)
	r, err := e.purger(t, nil, month, 0).Pass(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Purged[purge.KindExport] != 3 || e.obs.n[purge.KindExport] != 3 {
		t.Fatalf("purged %v (observed %v), want 3 exports", r.Purged, e.obs.n)
	}
	for _, p := range []string{e.dir.Path("old"), filepath.Join(e.dir.Root(), ".partial", "old"), aside, e.dir.Path("x1")} {
		if exists(t, p) {
			t.Fatalf("%s survived the purge", p)
		}
	}
	if !exists(t, e.dir.Path("young")) || !exists(t, e.dir.Path("slow")) {
		t.Fatal("an export within retention was deleted")
	}
	b, _ := e.st.Get("old")
	if b.State != store.StatePurged || b.Tombstone == nil || b.Tombstone.ManifestSHA256 != m.SHA256 ||
		b.Tombstone.ManifestItems != 2 || !b.Tombstone.ExportedAt.Equal(t0) || !b.Tombstone.ExportPurgedAt.Equal(now) {
		t.Fatalf("purged batch = %s %+v, want the manifest's sha256 %s", b.State, b.Tombstone, m.SHA256)
	}
	if y, _ := e.st.Get("young"); y.State != store.StateExported {
		t.Fatalf("young = %s", y.State)
	}
	if ids, _ := e.st.FileRemovals(); len(ids) != 0 {
		t.Fatalf("removals left: %v", ids)
	}
	logs := e.logs.String()
	if strings.Count(logs, `"event":"export_purged"`) != 3 || strings.Contains(logs, "52998224725") || strings.Contains(logs, "Maria") {
		t.Fatalf("logs = %s", logs)
	}
	if r, err := e.purger(t, nil, month, 0).Pass(context.Background(), now); err != nil || r.Purged[purge.KindExport] != 0 {
		t.Fatalf("second pass = %v %v, want nothing to do", r, err)
	}
}

func TestPassKeepsAnExportWhileADeliveryIsPending(t *testing.T) {
	e := newEnv(t)
	e.st.SetSinks([]string{"http"})
	e.export(t, "b1", t0)
	now := t0.Add(month + time.Hour)
	p := e.purger(t, nil, month, 0)
	r, err := p.Pass(context.Background(), now)
	if err != nil || r.Blocked != 1 || r.Purged[purge.KindExport] != 0 || !exists(t, e.dir.Path("b1")) {
		t.Fatalf("pass with a pending delivery = %+v %v; want the export kept", r, err)
	}
	ds, _ := e.st.Deliveries("b1")
	if err := e.st.FailDelivery("b1", "http", ds[0].Generation, "rejected", "HTTP 400"); err != nil {
		t.Fatal(err)
	}
	r, err = p.Pass(context.Background(), now)
	if err != nil || r.Purged[purge.KindExport] != 1 || exists(t, e.dir.Path("b1")) {
		t.Fatalf("pass after the delivery failed = %+v %v; want the export deleted", r, err)
	}
	if logs := e.logs.String(); !strings.Contains(logs, `"sinks_never_delivered":["http"]`) {
		t.Fatalf("the sinks that never had the export are not logged: %s", logs)
	}
}

func TestACrashBetweenTombstoneAndRemovalIsFinishedByTheNextPass(t *testing.T) {
	e := newEnv(t)
	e.export(t, "b1", t0)
	now := t0.Add(month + time.Hour)
	_, err := e.purger(t, failingFiles{files{e.dir}}, month, 0).Pass(context.Background(), now)
	if err == nil {
		t.Fatal("a failed removal was not reported")
	}
	b, _ := e.st.Get("b1")
	if b.State != store.StatePurged || b.Tombstone == nil || !exists(t, e.dir.Path("b1")) {
		t.Fatalf("after the interrupted purge: %s %+v; want the tombstone committed and the files still there", b.State, b.Tombstone)
	}
	if _, err := e.st.Refetch("b1", 2*month, now); !errors.Is(err, store.ErrState) || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("refetch while the purged files remain = %v, want ErrState", err)
	}
	// The next start's pass finishes the removal, nothing else due.
	if _, err := e.purger(t, nil, month, 0).Pass(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if exists(t, e.dir.Path("b1")) {
		t.Fatal("the next pass left the purged export on disk")
	}
	if ids, _ := e.st.FileRemovals(); len(ids) != 0 {
		t.Fatalf("removals left: %v", ids)
	}
}

func TestPassAppliesRecordRetention(t *testing.T) {
	e := newEnv(t)
	e.export(t, "b1", t0)
	e.export(t, "b2", t0.Add(80*day))
	if err := e.st.Quarantine(store.Quarantined{ID: "q1", Reason: "bad", ReceivedAt: t0, Raw: []byte(item)}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Audit(store.AuditEvent{ID: "a1", Event: "batch.started", ReceivedAt: t0, Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AddSubmission(store.Submission{ID: "s1", Valid: 1}, [][]string{{"52998224725"}}, t0); err != nil {
		t.Fatal(err)
	}
	c, _ := e.st.NextChunk()
	e.st.ChunkSending(c.Seq, c.Index, t0)
	if err := e.st.ChunkGiveUp(c.Seq, c.Index, store.ChunkFailed, "HTTP 400", t0); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(91 * day)
	r, err := e.purger(t, nil, 0, 90*day).Pass(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{purge.KindRecord: 1, purge.KindQuarantine: 1, purge.KindAudit: 1, purge.KindChunkCPFs: 1}
	for k, n := range want {
		if r.Purged[k] != n || e.obs.n[k] != n {
			t.Fatalf("purged %v (observed %v), want %v", r.Purged, e.obs.n, want)
		}
	}
	b1, _ := e.st.Get("b1")
	if b1.Notification.Raw != nil || b1.Checkpoint.Cursor != "" || b1.Tombstone == nil || b1.State != store.StateExported {
		t.Fatalf("b1 = %+v", b1)
	}
	if !exists(t, e.dir.Path("b1")) {
		t.Fatal("EXPORT_RETENTION=0 keeps exports for ever, but the export was deleted")
	}
	if b2, _ := e.st.Get("b2"); b2.Notification.Raw == nil {
		t.Fatal("b2 reduced before RECORD_RETENTION")
	}
	if _, err := e.st.GetQuarantined("q1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("old quarantine entry = %v", err)
	}
	if _, err := e.st.ChunkResend("s1", 0, now); !errors.Is(err, store.ErrState) {
		t.Fatalf("resend of a chunk whose CPFs were purged = %v", err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"event":"records_purged","record":1,"quarantine":1,"audit":1,"chunk_cpfs":1`) ||
		strings.Contains(logs, "52998224725") {
		t.Fatalf("logs = %s", logs)
	}
}

func TestRunPassesAtStart(t *testing.T) {
	e := newEnv(t)
	e.export(t, "b1", t0)
	p, err := purge.New(purge.Options{Store: e.st, Files: files{e.dir}, Logger: zerolog.New(e.logs),
		ExportRetention: month, Interval: time.Hour, Now: func() time.Time { return t0.Add(month + time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for exists(t, e.dir.Path("b1")) {
		if time.Now().After(deadline) {
			t.Fatal("Run made no pass at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if logs := e.logs.String(); !regexp.MustCompile(`"event":"purge_pass_finished","took_ms":\d+,"files_ms":\d+,"purged":\{"export":1\},"blocked":0`).MatchString(logs) {
		t.Fatalf("no purge_pass_finished line for the pass: %s", logs)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	e := newEnv(t)
	for _, o := range []purge.Options{
		{Files: files{e.dir}, Interval: time.Hour},
		{Store: e.st, Files: files{e.dir}, Interval: time.Hour, ExportRetention: -time.Second},
		{Store: e.st, Files: files{e.dir}},
	} {
		if _, err := purge.New(o); err == nil {
			t.Fatalf("New(%+v) accepted", o)
		}
	}
}

func TestAnExportAlreadyRemovedForTheSinksIsPurgedOnceDue(t *testing.T) {
	e := newEnv(t)
	e.st.SetSinks([]string{"http"})
	e.export(t, "b1", t0)
	ds, _ := e.st.Deliveries("b1")
	remove, err := e.st.Delivered("b1", "http", ds[0].Generation, t0, true)
	if err != nil || !remove {
		t.Fatalf("Delivered = %v %v; want the export queued for removal", remove, err)
	}
	if err := e.dir.Remove("b1"); err != nil {
		t.Fatal(err)
	}
	if err := e.st.FileRemovalDone(store.FileRemoval{BatchID: "b1"}); err != nil {
		t.Fatal(err)
	}
	p := e.purger(t, nil, month, 0)
	if r, err := p.Pass(context.Background(), t0.Add(month-time.Hour)); err != nil || r.Purged[purge.KindExport] != 0 {
		t.Fatalf("pass before retention = %+v %v", r, err)
	}
	r, err := p.Pass(context.Background(), t0.Add(month+time.Hour))
	if err != nil || r.Purged[purge.KindExport] != 1 {
		t.Fatalf("pass after retention = %+v %v", r, err)
	}
	b, _ := e.st.Get("b1")
	if b.State != store.StatePurged || b.Tombstone.ManifestItems != 2 || !b.Tombstone.ExportedAt.Equal(t0) || len(b.Tombstone.NeverDelivered) != 0 {
		t.Fatalf("b1 = %s %+v", b.State, b.Tombstone)
	}
}

// oneStuck is the export root with one batch's files undeletable (an
// immutable file, a disk refusing the delete).
type oneStuck struct {
	files
	id string
}

func (f oneStuck) Purge(ids []string) []error {
	rest := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == f.id })
	errs := f.files.Purge(rest)
	out := make([]error, 0, len(ids))
	for _, id := range ids {
		if id == f.id {
			out = append(out, errors.New("operation not permitted"))
			continue
		}
		out, errs = append(out, errs[0]), errs[1:]
	}
	return out
}

// TestAnUndeletableExportDoesNotHoldUpTheOthers: one purged export whose
// files cannot be deleted is logged and retried; the pass still purges the
// other exports due, now and at the next pass.
func TestAnUndeletableExportDoesNotHoldUpTheOthers(t *testing.T) {
	e := newEnv(t)
	e.export(t, "b1", t0)
	e.export(t, "b2", t0)
	now := t0.Add(month + time.Hour)
	stuck := oneStuck{files{e.dir}, "b1"}
	r, err := e.purger(t, stuck, month, 0).Pass(context.Background(), now)
	if err == nil || !strings.Contains(err.Error(), "b1") {
		t.Fatalf("Pass = %v; want an error naming b1", err)
	}
	if exists(t, e.dir.Path("b2")) || r.Purged[purge.KindExport] != 1 {
		t.Fatalf("b2 was not purged beside the stuck b1 (purged %v)", r.Purged)
	}
	e.export(t, "b3", t0.Add(time.Hour))
	if _, err := e.purger(t, stuck, month, 0).Pass(context.Background(), now.Add(2*time.Hour)); err == nil {
		t.Fatal("the second pass did not report b1 again")
	}
	if exists(t, e.dir.Path("b3")) {
		t.Fatal("a stuck deletion from an earlier pass held up the next export due")
	}
	if ids, _ := e.st.FileRemovals(); len(ids) != 1 || ids[0].BatchID != "b1" {
		t.Fatalf("removals listed %v, want [b1]", ids)
	}
	if !strings.Contains(e.logs.String(), `"event":"purge_failed","batch_id":"b1"`) {
		t.Fatalf("no purge_failed line for b1: %s", e.logs)
	}
}
