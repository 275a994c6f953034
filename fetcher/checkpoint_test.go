package fetcher

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// groupQueue records the groups it is asked to commit; the first commit
// blocks until release is closed. Batch "bad" fails alone.
type groupQueue struct {
	Queue
	mu      sync.Mutex
	groups  [][]string
	release chan struct{}
}

func (q *groupQueue) Checkpoints(ups []store.CheckpointUpdate, _ time.Time) []error {
	q.mu.Lock()
	first := len(q.groups) == 0
	var ids []string
	errs := make([]error, len(ups))
	for i, u := range ups {
		ids = append(ids, u.ID)
		if u.ID == "bad" {
			errs[i] = fmt.Errorf("checkpoint batch bad: %w", store.ErrState)
		}
	}
	q.groups = append(q.groups, ids)
	q.mu.Unlock()
	if first {
		<-q.release
	}
	return errs
}

// Checkpoints that queue while a commit runs share the next one, and each
// caller gets its own batch's outcome.
func TestCheckpointsQueuedDuringACommitShareTheNext(t *testing.T) {
	q := &groupQueue{release: make(chan struct{})}
	c := &checkpoints{q: q, now: time.Now}
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.commit(id, store.Checkpoint{Pages: 1})
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		}()
	}
	run("b0")
	waitFor(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.groups) == 1 })
	for _, id := range []string{"b1", "bad", "b3"} {
		run(id)
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.pending) == 3 })
	close(q.release)
	wg.Wait()
	for _, g := range q.groups {
		slices.Sort(g)
	}
	if got := fmt.Sprint(q.groups); got != "[[b0] [b1 b3 bad]]" {
		t.Fatalf("commits: %s, want the three queued checkpoints in one", got)
	}
	for id, err := range errs {
		if (id == "bad") != errors.Is(err, store.ErrState) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if len(errs) != 4 || c.leading || len(c.pending) != 0 {
		t.Fatalf("answers %d, leading %v, pending %d", len(errs), c.leading, len(c.pending))
	}
	// Alone again: one commit of its own, no wait.
	if err := c.commit("b4", store.Checkpoint{}); err != nil || len(q.groups) != 3 {
		t.Fatalf("lone checkpoint: %v, %d commits", err, len(q.groups))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
