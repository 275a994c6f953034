package fetcher

import (
	"sync"
	"time"

	"github.com/batchhook/batchhook/store"
)

// checkpoints lets the workers share checkpoint commits. Each checkpoint is
// a fsynced bbolt commit and the store has one writer, so with
// FETCH_WORKERS workers each page used to wait for the others' commits
// before its own. Here a worker whose checkpoint finds no commit under way
// leads: it commits every checkpoint queued at that moment in one
// transaction (Queue.Checkpoints) and answers each; checkpoints that arrive
// meanwhile wait, and the first of them leads the next round. A lone
// worker pays one commit and no delay. Each checkpoint still commits only
// after its own page was synced (the caller's order) and is answered only
// after the commit returned.
type checkpoints struct {
	q       Queue
	now     func() time.Time
	mu      sync.Mutex
	pending []*checkpointReq
	leading bool
}

type checkpointReq struct {
	up   store.CheckpointUpdate
	done chan error    // the commit's outcome for this checkpoint
	lead chan struct{} // this request's worker leads the next round
}

// commit records cp for batch id, alone or with the other workers'.
func (c *checkpoints) commit(id string, cp store.Checkpoint) error {
	r := &checkpointReq{up: store.CheckpointUpdate{ID: id, Checkpoint: cp},
		done: make(chan error, 1), lead: make(chan struct{}, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, r)
	follow := c.leading
	c.leading = true
	c.mu.Unlock()
	if follow {
		select {
		case err := <-r.done:
			return err
		case <-r.lead:
		}
	}
	c.round()
	return <-r.done
}

// round commits everything pending (the leader's own request included),
// then hands the lead to the first request that queued meanwhile.
func (c *checkpoints) round() {
	c.mu.Lock()
	reqs := c.pending
	c.pending = nil
	c.mu.Unlock()
	ups := make([]store.CheckpointUpdate, len(reqs))
	for i, r := range reqs {
		ups[i] = r.up
	}
	errs := c.q.Checkpoints(ups, c.now())
	for i, r := range reqs {
		r.done <- errs[i]
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.leading = false
		c.mu.Unlock()
		return
	}
	next := c.pending[0]
	c.mu.Unlock()
	next.lead <- struct{}{}
}

// committing is a page's checkpoint committing in the background while the
// worker stages the next page: the next page's bytes may reach the file
// before this checkpoint commits (a crash then leaves them beyond the
// checkpoint, and the resumed fetch cuts them), but the next checkpoint is
// not asked for before this one returned. Each checkpoint still follows
// its own page's sync.
type committing struct {
	cp    store.Checkpoint
	items int
	done  chan struct{}
	err   error
}

// start commits cp for batch id in the background.
func (c *checkpoints) start(id string, cp store.Checkpoint, items int) *committing {
	p := &committing{cp: cp, items: items, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = c.commit(id, cp)
	}()
	return p
}

// wait returns the commit's outcome; nil for no commit.
func (p *committing) wait() error {
	if p == nil {
		return nil
	}
	<-p.done
	return p.err
}
