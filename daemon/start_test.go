package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// fillStore records n batches in a store in dir through the webhook's
// write (RecordContext, many writers sharing the group commit) and leaves
// the first leased ones in fetching, as a killed run does. It returns the
// ids left in fetching.
func fillStore(t *testing.T, dir string, n, leased int) []string {
	t.Helper()
	s, err := store.Open(dir, LockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now().UTC().Add(-time.Hour)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				id := fmt.Sprintf("b_%020d", i)
				raw := fmt.Sprintf(`{"event":"batch.completed","batch_id":%q,"status":"failed"}`, id)
				if _, err := s.RecordContext(context.Background(), store.Notification{Event: "batch.completed", BatchID: id,
					Status: "failed", Attempt: 1, ReceivedAt: at, Source: store.SourceWebhook, Raw: []byte(raw)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var ids []string
	for range leased {
		b, _, err := s.Lease(time.Now())
		if err != nil || b == nil {
			t.Fatalf("lease: %v, %v", b, err)
		}
		ids = append(ids, b.ID)
	}
	return ids
}

// startReads starts a daemon on a store of n batches, three of them left
// in fetching, waits until /readyz answers 200 and /metrics has been read
// once, and returns how many batch records the start read. It checks that
// the batches left in fetching were released.
func startReads(t *testing.T, n int) uint64 {
	t.Helper()
	dir := t.TempDir()
	leased := fillStore(t, dir, n, 3)
	cfg, ln, _ := testConfig(t, dir)
	cfg.FetchWorkers = 0 // no worker leases a batch and reads it meanwhile
	before := store.RecordsRead()
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	base := "http://" + d.AdminAddr().String()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reads := store.RecordsRead() - before
	for _, id := range leased {
		if b, err := d.Batch(id); err != nil || b.State != store.StateQueued {
			t.Fatalf("batch %s left in fetching: %+v, %v; want queued again", id, b, err)
		}
	}
	return reads
}

// A start reads the few records it needs (the batches a stopped run left
// in fetching, the first pass of the loops), not every record stored: the
// same number for 1,000 batches as for 20,000 (within a small margin for
// the loops' first passes, which run alongside).
func TestStartDoesNotReadEveryRecord(t *testing.T) {
	small := startReads(t, 1000)
	large := startReads(t, 20000)
	t.Logf("records read by a start: %d with 1,000 batches, %d with 20,000", small, large)
	if large > small+50 {
		t.Fatalf("a start read %d records with 20,000 batches stored and %d with 1,000: it reads every record", large, small)
	}
}
