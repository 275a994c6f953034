package main

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/batchhook/batchhook/export"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
	"github.com/batchhook/batchhook/lifecycle/purge"
	"github.com/batchhook/batchhook/store"
)

// smallShape is 2,000 batches over 30 days: 10 days of whole records, 5
// of exports, a day of each due at the first purge pass.
func smallShape(dir string) Options {
	return Options{Dir: dir, Batches: 2000, Days: 30, FullDays: 10, ExportDays: 5, Due: 24 * time.Hour,
		Sinks: 2, ExportItems: 3, PaymentsPerMinute: 0.1, Seed: 7, Now: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)}
}

// small is the one build of smallShape the tests share: each test works
// on its own copy of the database.
var small struct {
	once sync.Once
	o    Options
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if small.o.Dir != "" {
		os.RemoveAll(small.o.Dir)
	}
	os.Exit(code)
}

// buildSmall returns smallShape built in a directory of the test's own.
func buildSmall(t *testing.T) Options {
	t.Helper()
	small.once.Do(func() {
		dir, err := os.MkdirTemp("", "scale-test-")
		if err != nil {
			small.err = err
			return
		}
		small.o = smallShape(dir)
		small.err = build(small.o, io.Discard)
	})
	if small.err != nil {
		t.Fatal(small.err)
	}
	o := small.o
	o.Dir = t.TempDir()
	if err := os.CopyFS(dataDir(o.Dir), os.DirFS(dataDir(small.o.Dir))); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestBuildHoldsTheShape: the counts by state, the deliveries of both
// sinks, the submissions and the payments log are the shape's, and the
// indexes agree with the records (verify), and a batch of each age is
// what the pipeline and the purger leave.
func TestBuildHoldsTheShape(t *testing.T) {
	o := buildSmall(t)
	want, err := verify(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if want.States[store.StatePurged] == 0 || want.States[store.StateExported] == 0 || want.States[store.StateQueued] != inflight {
		t.Fatalf("the shape has no batch of some age: %v", want.States)
	}
	if want.DueExports < 50 || want.DueExports > 80 || want.DueRecords < 50 || want.DueRecords > 80 {
		t.Fatalf("due at the first pass: %d exports, %d records, want about a day's worth (67)", want.DueExports, want.DueRecords)
	}
	ids := makeIDs(o)
	s, err := store.Open(dataDir(o.Dir), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	oldest, err := s.Get(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if ts := oldest.Tombstone; oldest.State != store.StatePurged || ts == nil || ts.RecordPurgedAt.IsZero() || ts.ExportPurgedAt.IsZero() ||
		ts.RawSHA256 == "" || oldest.Notification.Raw != nil || oldest.Checkpoint.Seen != "" {
		t.Fatalf("the oldest batch is not a reduced tombstone: %+v", oldest)
	}
	// A batch 8 days old: its export purged, its record still whole.
	mid, err := s.Get(ids[o.Batches*22/30])
	if err != nil {
		t.Fatal(err)
	}
	if mid.State != store.StatePurged || mid.Tombstone == nil || !mid.Tombstone.RecordPurgedAt.IsZero() || mid.Notification.Raw == nil {
		t.Fatalf("a batch 8 days old: %+v", mid)
	}
	newest, err := s.Get(ids[o.Batches-inflight-1])
	if err != nil {
		t.Fatal(err)
	}
	if newest.State != store.StateExported || newest.Tombstone != nil || !newest.Checkpoint.Done || newest.ExportPath == "" {
		t.Fatalf("the newest exported batch: %+v", newest)
	}
	var body struct {
		Event   string `json:"event"`
		BatchID string `json:"batch_id"`
	}
	if err := json.Unmarshal(newest.Notification.Raw, &body); err != nil || body.Event != "batch.completed" || body.BatchID != newest.ID {
		t.Fatalf("raw body %s: %v", newest.Notification.Raw, err)
	}
	if len(newest.ID) != 22 || !strings.HasPrefix(newest.ID, "b_") {
		t.Fatalf("batch id %q is not provider-like", newest.ID)
	}
	for _, id := range []string{ids[0], newest.ID} {
		ds, err := s.Deliveries(id)
		if err != nil || len(ds) != 2 || ds[0].Sink != "exec" || ds[1].Sink != "http" {
			t.Fatalf("deliveries of %s: %+v, %v", id, ds, err)
		}
	}
	// Known answers duplicate for every age: the id index is whole.
	for _, id := range []string{ids[0], mid.ID, newest.ID, ids[o.Batches-1]} {
		if known, err := s.Known(id); err != nil || !known {
			t.Fatalf("Known(%s) = %t, %v", id, known, err)
		}
	}
	list, _, err := s.List(store.StatePurged, 5000, "")
	if err != nil || len(list) != want.States[store.StatePurged] {
		t.Fatalf("List(purged): %d batches, want %d (%v)", len(list), want.States[store.StatePurged], err)
	}
	if subs, _, err := s.ListSubmissions(100, ""); err != nil || len(subs) != want.Submissions {
		t.Fatalf("%d submissions listed, want %d (%v)", len(subs), want.Submissions, err)
	}
}

// TestFirstPurgePassTakesADay: a purge pass at the shape's now, with its
// retentions, purges the exports and records the shape says are due (a
// day's worth) and nothing else.
func TestFirstPurgePassTakesADay(t *testing.T) {
	o := buildSmall(t)
	want := o.expect()
	s, err := store.Open(dataDir(o.Dir), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir, err := export.New(filepath.Join(dataDir(o.Dir), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	if got := exportNames(t, o); len(got) != want.DueExports {
		t.Fatalf("%d exports on disk, want the %d due at the first pass", len(got), want.DueExports)
	}
	p, err := purge.New(purge.Options{Store: s, Files: exportFiles{dir}, Logger: zerolog.Nop(), Interval: time.Hour,
		ExportRetention: time.Duration(o.ExportDays) * 24 * time.Hour, RecordRetention: time.Duration(o.FullDays) * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Pass(context.Background(), o.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Purged[purge.KindExport] != want.DueExports || r.Purged[purge.KindRecord] != want.DueRecords || r.Blocked != 0 {
		t.Fatalf("first pass: %v (blocked %d), want %d exports and %d records", r.Purged, r.Blocked, want.DueExports, want.DueRecords)
	}
	if bodies := r.Purged[purge.KindPaymentBody]; bodies == 0 || bodies > want.Payments/o.Days*2 {
		t.Fatalf("first pass dropped %d payment bodies, want about a day's worth", bodies)
	}
	if got := exportNames(t, o); len(got) != 0 {
		t.Fatalf("exports left on disk after the first pass: %v", got)
	}
	again, err := p.Pass(context.Background(), o.Now)
	if err != nil || len(again.Purged) != 0 {
		t.Fatalf("second pass: %v, %v", again.Purged, err)
	}
}

// TestDaemonStartsOnTheBuild: the daemon opens the database, with the
// shape's sinks configured, and becomes ready.
func TestDaemonStartsOnTheBuild(t *testing.T) {
	o := buildSmall(t)
	cfg := config.Defaults()
	cfg.DataDir = dataDir(o.Dir)
	cfg.ExportDir = filepath.Join(cfg.DataDir, "exports")
	cfg.ListenAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.SigningSecret, cfg.APIKey = config.Secret("s"), config.Secret("k")
	cfg.APIBaseURL = "http://127.0.0.1:1" // nothing listens: the queued batches wait
	cfg.Sinks = "file,http,exec"
	cfg.HTTPSinkURL = "http://127.0.0.1:1/hooks"
	cfg.HTTPSinkSecret = config.Secret("whsec_" + "c2NhbGUtdGVzdC1zZWNyZXQtMzItYnl0ZXMtbG9uZyE=")
	cfg.ExecSinkCommand = `["/bin/false"]`
	cfg.FetchWorkers = 1
	if err := cfg.Validate(daemon.SinkRules()); err != nil {
		t.Fatal(err)
	}
	d := daemon.New(cfg, zerolog.Nop())
	if err := d.Start(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Stop(ctx)
	})
	url := "http://" + d.AdminAddr().String() + "/readyz"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 10 s: %v", errors.Join(err))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exportFiles is the built export root as the purger sees it.
type exportFiles struct{ d *export.Dir }

func (f exportFiles) Manifests(ids []string) ([]purge.Manifest, error) {
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

func (f exportFiles) Purge(ids []string) []error { return f.d.PurgeAll(ids) }

// exportNames lists the exports on disk under the data directory.
func exportNames(t *testing.T, o Options) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dataDir(o.Dir), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}
