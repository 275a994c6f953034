package fetcher_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// waitForRequest is a Queue whose Checkpoint of page k commits only once
// the provider has been asked for page k+1: the fetcher must read the next
// page while it stages and checkpoints the current one.
type waitForRequest struct {
	*store.Store
	requests *atomic.Int64
	missed   atomic.Int64
}

func (q *waitForRequest) Checkpoints(ups []store.CheckpointUpdate, now time.Time) []error {
	for _, u := range ups {
		cp := u.Checkpoint
		if cp.Done {
			continue
		}
		deadline := time.Now().Add(2 * time.Second)
		for q.requests.Load() <= cp.Pages {
			if time.Now().After(deadline) {
				q.missed.Add(1)
				err := fmt.Errorf("page %d checkpointed before page %d was requested", cp.Pages, cp.Pages+1)
				return []error{err}
			}
			time.Sleep(time.Millisecond)
		}
	}
	return q.Store.Checkpoints(ups, now)
}

func TestTheNextPageIsReadWhileThisOneIsStaged(t *testing.T) {
	p := &provider{n: 45, pageSize: 10}
	var requests atomic.Int64
	p.fail = func(call, _ int) int {
		requests.Store(int64(call))
		return 0
	}
	r := newRig(t, p, 1)
	q := &waitForRequest{Store: r.store, requests: &requests}
	r.f = r.fetcherWith(t, q, 10)
	r.record(t, "b1", t0)
	r.runOnce(t)
	b := r.get(t, "b1")
	if q.missed.Load() != 0 || b.State != store.StateExported || b.Checkpoint.Pages != 5 || b.Checkpoint.Items != 45 {
		t.Fatalf("missed %d read-aheads; batch %s %+v (%s)", q.missed.Load(), b.State, b.Checkpoint, b.LastError)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatal("export differs from the provider's items")
	}
	if got := requests.Load(); got != 5 {
		t.Fatalf("%d requests for 5 pages: a page read ahead must be the one staged next", got)
	}
}
