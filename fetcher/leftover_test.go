package fetcher_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/store"
)

// stickyStaging is the export root with staging that cannot be removed
// while stuck is set (a disk refusing the delete).
type stickyStaging struct {
	*export.Dir
	stuck atomic.Bool
}

func (s *stickyStaging) Discard(id string) error {
	if s.stuck.Load() {
		return errors.New("operation not permitted")
	}
	return s.Dir.Discard(id)
}

// TestABatchDoesNotEndWithItsLeftoverStaged: a refetch swapped its export
// in, and the old export, moved into staging by the swap, could not be
// deleted. The batch must not end exported with that copy of personal
// data left behind for good (nothing looks at a finished batch's staging,
// and an erasure does not rewrite staging): it is retried until the copy
// is gone.
func TestABatchDoesNotEndWithItsLeftoverStaged(t *testing.T) {
	p := &provider{n: 4, pageSize: 10}
	r := newRig(t, p, 1)
	first := exportOnce(t, r)
	sticky := &stickyStaging{Dir: r.sink}
	f, err := fetcher.New(fetcher.Options{Queue: r.store, Stager: sticky, Pager: r.pager, Logger: zerolog.Nop(), Workers: 1,
		Retention: week, NotFoundGrace: time.Hour, BackoffBase: time.Second, BackoffMax: time.Minute,
		IdlePoll: 50 * time.Millisecond, Now: func() time.Time { return *r.now.Load() }, Jitter: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	r.advance(time.Minute)
	refetched, err := r.store.Refetch("b1", week, *r.now.Load())
	if err != nil {
		t.Fatal(err)
	}
	// The refetch's export is in place (here: the old one, dated after the
	// request), and the old export is in staging, as the swap leaves it
	// before deleting it; the delete failed, and so did the batch's record.
	r.advance(time.Second)
	if _, _, err := r.store.Lease(*r.now.Load()); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(r.sink.Root(), ".partial", "b1")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(first.ExportPath, export.ResultsFile))
	if err := os.WriteFile(filepath.Join(old, export.ResultsFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(first.ExportPath, export.ManifestFile)
	var m map[string]any
	raw, _ := os.ReadFile(manifest)
	json.Unmarshal(raw, &m)
	m["exported_at"], m["version"] = refetched.RefetchAt.Add(time.Second), 1
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(manifest, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ReleaseLeases(*r.now.Load()); err != nil {
		t.Fatal(err)
	}
	sticky.stuck.Store(true)
	if _, err := f.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := r.get(t, "b1")
	if b.State == store.StateExported {
		t.Fatalf("the refetch ended exported although what it left staged could not be removed (last error %q)", b.LastError)
	}
	if b.State != store.StateQueued || !strings.Contains(b.LastError, "remove what is staged") {
		t.Fatalf("state %s, last error %q; want queued with the reason", b.State, b.LastError)
	}
	sticky.stuck.Store(false)
	r.advance(time.Minute)
	if _, err := f.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := r.get(t, "b1"); b.State != store.StateExported || b.Version() != 1 {
		t.Fatalf("once the staging could go: state %s, version %d; want exported, version 1", b.State, b.Version())
	}
	if names := r.partialEntries(t); len(names) != 0 {
		t.Fatalf("staging left behind: %v", names)
	}
}
