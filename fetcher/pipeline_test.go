package fetcher_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

// stagedSize is the length of b1's staged results (0 when none).
func (r *rig) stagedSize() int64 {
	st, err := os.Stat(filepath.Join(r.sink.Root(), ".partial", "b1", export.ResultsFile))
	if err != nil {
		return 0
	}
	return st.Size()
}

// waitForNextPage is a Queue whose checkpoint of a page commits only once
// the next page is staged: the fetcher must stage page k+1 while page k's
// checkpoint commits.
type waitForNextPage struct {
	*store.Store
	r      *rig
	missed atomic.Int64
}

func (q *waitForNextPage) Checkpoints(ups []store.CheckpointUpdate, now time.Time) []error {
	for _, u := range ups {
		if u.Checkpoint.Done || u.Checkpoint.Pages == 0 {
			continue
		}
		deadline := time.Now().Add(2 * time.Second)
		for q.r.stagedSize() <= u.Checkpoint.StagedBytes {
			if time.Now().After(deadline) {
				q.missed.Add(1)
				return []error{fmt.Errorf("page %d checkpointed before page %d was staged", u.Checkpoint.Pages, u.Checkpoint.Pages+1)}
			}
			time.Sleep(time.Millisecond)
		}
	}
	return q.Store.Checkpoints(ups, now)
}

func TestTheNextPageIsStagedWhileThisOneIsCheckpointed(t *testing.T) {
	p := &provider{n: 45, pageSize: 10}
	r := newRig(t, p, 1)
	q := &waitForNextPage{Store: r.store, r: r}
	r.f = r.fetcherWith(t, q, 10)
	r.record(t, "b1", t0)
	r.runOnce(t)
	b := r.get(t, "b1")
	if q.missed.Load() != 0 || b.State != store.StateExported || b.Checkpoint.Pages != 5 || b.Checkpoint.Items != 45 {
		t.Fatalf("missed %d overlaps; batch %s %+v (%s)", q.missed.Load(), b.State, b.Checkpoint, b.LastError)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatal("export differs from the provider's items")
	}
}

// failSecond fails the checkpoint of page 2 once, as a failed write does.
type failSecond struct {
	*store.Store
	r       *rig
	failed  atomic.Bool
	staged  atomic.Int64 // staged bytes when it failed
	checkAt atomic.Int64 // the checkpoint's staged bytes then
}

func (q *failSecond) Checkpoints(ups []store.CheckpointUpdate, now time.Time) []error {
	if len(ups) == 1 && ups[0].Checkpoint.Pages == 2 && q.failed.CompareAndSwap(false, true) {
		b, _ := q.Store.Get(ups[0].ID)
		time.Sleep(50 * time.Millisecond) // let page 3 reach the file
		q.staged.Store(q.r.stagedSize())
		q.checkAt.Store(b.Checkpoint.StagedBytes)
		return []error{errors.New("write failed: input/output error")}
	}
	return q.Store.Checkpoints(ups, now)
}

// A page staged while the previous checkpoint commits, when that commit
// fails, lies beyond the last checkpoint: the resumed fetch cuts it and
// the export has every item once.
func TestAPageStagedBeyondAFailedCheckpointIsCutOnResume(t *testing.T) {
	p := &provider{n: 45, pageSize: 10}
	r := newRig(t, p, 1)
	q := &failSecond{Store: r.store, r: r}
	r.f = r.fetcherWith(t, q, 10)
	r.record(t, "b1", t0)
	r.runOnce(t)
	b := r.get(t, "b1")
	if b.State != store.StateQueued || b.Checkpoint.Pages != 1 {
		t.Fatalf("after the failed checkpoint: %s %+v", b.State, b.Checkpoint)
	}
	lines := bytes.SplitAfter(p.want(), []byte("\n"))
	if q.staged.Load() != int64(len(bytes.Join(lines[:30], nil))) {
		t.Fatalf("staged %d bytes (checkpoint at %d) when page 2's checkpoint failed, want pages 1 to 3 staged",
			q.staged.Load(), q.checkAt.Load())
	}
	r.advance(time.Hour)
	r.runOnce(t)
	b = r.get(t, "b1")
	if b.State != store.StateExported || b.Checkpoint.Items != 45 {
		t.Fatalf("after resume: %s %+v (%s)", b.State, b.Checkpoint, b.LastError)
	}
	if got := readExport(t, b); !bytes.Equal(got, p.want()) {
		t.Fatal("export after resume differs from the provider's items")
	}
}
