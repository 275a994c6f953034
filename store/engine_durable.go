package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// durableDB is the store's handle on bbolt. It makes two promises that
// bbolt alone does not:
//
//  1. No read answers from a commit that has not returned. bbolt writes the
//     new meta page (pwrite) before its fdatasync, and a read transaction
//     begun in between already sees the commit (tx.go writeMeta; db.go
//     beginTx copies db.meta(), the valid meta with the highest txid;
//     Tx.OnCommit handlers run only after the sync). A read's tx.ID() is
//     its meta's txid: View waits while it is newer than the last commit
//     that returned. The webhooks' lookups (Known, PaymentKnown, the
//     quarantine and audit entries) wait less: only for the commit that
//     wrote the record they found, so a `duplicate` is never answered for a
//     record still syncing, and never waits for a commit it does not depend
//     on (on a slow disk each commit may take seconds, and the sender's
//     reply has a deadline). Commits are serialised (writeMu), so at most
//     one is under way; it marks the keys it makes known (mark), and a
//     record found under a key it did not mark was written by a commit that
//     returned, or was on the file at open.
//  2. A failed commit fails the store closed. Once the meta page is written
//     the commit stays visible in the page cache even if its fdatasync
//     fails, and after an fsync error the kernel may have dropped unwritten
//     pages: nothing read from the file can be trusted and the fsync is not
//     retried on the same file. Every later read and write returns
//     ErrFailed, Failed() is closed, and the daemon exits for its
//     supervisor to restart it (DECISIONS 31: no reopening in-process).
//
// Every failed commit counts, a full disk (ENOSPC, EDQUOT) included
// (DECISIONS 31): the store cannot tell from bbolt's error which pages
// reached the file, and a daemon that stayed up on a full disk would be
// declared ready again by the next empty commit (an idle Lease commits and
// succeeds on a full disk) while every real write fails. Exiting makes the
// failure plain to the supervisor and to whoever watches its restarts; the
// provider's retries are recorded once the disk takes writes again.
//
// Every write goes through Update, whose embedded bbolt method it shadows;
// DB.Batch is not used (it would bypass this type).
type durableDB struct {
	*bolt.DB

	// writeMu holds one write transaction and its failure check together,
	// so no other commit lands between a failure and the look at it.
	writeMu sync.Mutex

	mu       sync.Mutex
	durable  int           // txid of the last commit that returned nil
	advanced chan struct{} // closed (and replaced) when durable moves or the store fails
	failed   error         // sticky, wraps ErrFailed
	failedCh chan struct{} // closed with failed
	writeErr error         // the last write's failure, until a write commits
	// marked holds the keys the commit under way makes known (mark), and
	// markedTx its txid; both are cleared once it has returned or failed.
	marked   map[string]struct{}
	markedTx int

	writeErrors atomic.Uint64
}

// durableWait bounds how long a read waits for the commit its snapshot
// saw; a commit that neither returns nor fails in that time is answered
// as a storage error (503) rather than wedging the caller.
const durableWait = 30 * time.Second

func newDurableDB(db *bolt.DB) (*durableDB, error) {
	d := &durableDB{DB: db, advanced: make(chan struct{}), failedCh: make(chan struct{}), marked: map[string]struct{}{}}
	// What is on the file at open is the starting point: bbolt does not
	// begin from a meta page whose commit it did not finish writing.
	err := db.View(func(tx *bolt.Tx) error {
		d.durable = tx.ID()
		return nil
	})
	return d, err
}

// Update runs fn in a write transaction like bolt.DB.Update, and tracks
// its commit: a success makes its txid durable and clears the last write
// error; a failed commit fails the store (see durableDB).
func (d *durableDB) Update(fn func(*bolt.Tx) error) error { return d.update(fn, true) }

// update is Update; clears is false for the readiness probe's empty
// transaction, which commits even on a full disk and so proves nothing
// about the write that failed.
func (d *durableDB) update(fn func(*bolt.Tx) error, clears bool) error {
	if err := d.failure(); err != nil {
		return err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if err := d.failure(); err != nil {
		return err
	}
	var (
		id    int
		ran   bool
		fnErr error
	)
	err := d.DB.Update(func(tx *bolt.Tx) error {
		id, ran = tx.ID(), true
		fnErr = fn(tx)
		return fnErr
	})
	switch {
	case err == nil:
		d.committed(id, clears)
	case ran && fnErr == nil: // fn succeeded: the commit itself failed
		d.commitFailed(id, err)
	}
	d.unmark() // after committed or fail: a reader that misses a mark sees either
	return err
}

// mark notes, from inside an Update's function, that its transaction makes
// key known (a record a webhook's lookup may find): until the commit has
// returned, a lookup that finds key waits for it (settled). Every write
// that makes such a key known must mark it; a key found unmarked is taken
// as durable.
func (d *durableDB) mark(tx *bolt.Tx, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.marked[key] = struct{}{}
	d.markedTx = tx.ID()
}

func (d *durableDB) unmark() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.marked)
	d.markedTx = 0
}

// settled returns once key, found in a read transaction whose snapshot is
// snap, is durable: at once unless the commit under way marked it, else
// when that commit has returned. It returns ErrFailed when the store has
// failed, and ErrSlowCommit when ctx ends first.
func (d *durableDB) settled(ctx context.Context, key string, snap int) error {
	d.mu.Lock()
	_, writing := d.marked[key]
	id, failed := d.markedTx, d.failed
	d.mu.Unlock()
	switch {
	case failed != nil:
		return failed
	case !writing:
		return nil
	}
	// A snapshot older than the marking commit saw the key from an earlier
	// commit, which has returned (commits are serialised).
	return d.waitDurableContext(ctx, min(id, snap))
}

// View runs fn in a read transaction, then waits until the commit its
// snapshot includes has returned (at once, unless a commit is syncing).
func (d *durableDB) View(fn func(*bolt.Tx) error) error {
	snap, err := d.viewAt(fn)
	if snap >= 0 {
		if werr := d.waitDurable(snap); werr != nil {
			return werr
		}
	}
	return err
}

// viewAt runs fn in a read transaction without waiting, and returns the
// snapshot's txid (-1 when none began) for the caller to waitDurable on
// when its answer needs it: Known waits only for a "known", since an
// unknown batch goes on to Record, whose commit follows any in flight.
func (d *durableDB) viewAt(fn func(*bolt.Tx) error) (int, error) {
	if err := d.failure(); err != nil {
		return -1, err
	}
	snap := -1
	err := d.DB.View(func(tx *bolt.Tx) error {
		snap = tx.ID()
		return fn(tx)
	})
	return snap, err
}

func (d *durableDB) waitDurable(id int) error {
	return d.waitDurableContext(context.Background(), id)
}

// waitDurableContext waits until commit id has returned, at most
// durableWait; ErrSlowCommit when ctx ends first.
func (d *durableDB) waitDurableContext(ctx context.Context, id int) error {
	timeout := time.NewTimer(durableWait)
	defer timeout.Stop()
	for {
		d.mu.Lock()
		failed, durable, ch := d.failed, d.durable, d.advanced
		d.mu.Unlock()
		switch {
		case failed != nil:
			return failed
		case durable >= id:
			return nil
		}
		select {
		case <-ch:
		case <-timeout.C:
			return fmt.Errorf("wait for commit %d to return: still syncing after %s", id, durableWait)
		case <-ctx.Done():
			return fmt.Errorf("wait for commit %d to return: %w (%w)", id, ErrSlowCommit, context.Cause(ctx))
		}
	}
}

func (d *durableDB) committed(id int, clears bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id > d.durable {
		d.durable = id
	}
	if clears {
		d.writeErr = nil
	}
	close(d.advanced)
	d.advanced = make(chan struct{})
}

// commitFailed fails the store after the failed commit of transaction id
// (under writeMu, so no other commit has landed since).
func (d *durableDB) commitFailed(id int, err error) {
	d.writeFailed(err)
	d.fail(fmt.Errorf("%w: commit of transaction %d: %w", ErrFailed, id, err))
}

// writeFailed records a write that did not commit: counted, and reported
// by Err until a later write commits.
func (d *durableDB) writeFailed(err error) {
	d.writeErrors.Add(1)
	d.mu.Lock()
	d.writeErr = err
	d.mu.Unlock()
}

func (d *durableDB) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return
	}
	d.failed = err
	close(d.failedCh)
	close(d.advanced)
	d.advanced = make(chan struct{})
}

func (d *durableDB) failure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// Err returns nil while the store is healthy; an error wrapping ErrFailed
// once a commit failed (for good); otherwise the last write's error until a
// later write commits (the readiness check reports it).
func (s *Store) Err() error {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if s.db.failed != nil {
		return s.db.failed
	}
	if s.db.writeErr != nil {
		return fmt.Errorf("last write failed: %w", s.db.writeErr)
	}
	return nil
}

// Failed is closed when a commit failed and the store refuses everything
// from then on (ErrFailed). The daemon then stops and exits non-zero.
func (s *Store) Failed() <-chan struct{} { return s.db.failedCh }

// WriteErrors counts the writes that did not commit since Open (failed
// commits and refused writes), for batchhook_store_write_errors_total.
func (s *Store) WriteErrors() uint64 { return s.db.writeErrors.Load() }

// bypass is a type no caller can name: Batch and Begin below shadow
// bbolt's methods of the same names with signatures nothing can call, so a
// write that would bypass Update's commit tracking does not compile.
type bypass struct{}

// Batch is not available: use Update (DB.Batch would also retry its
// function and commit outside the tracking).
func (d *durableDB) Batch(bypass) {}

// Begin is not available: a manual transaction would commit outside the
// tracking. Use Update or View.
func (d *durableDB) Begin(bypass) {}

// Ping checks that the database accepts a write transaction. Its empty
// commit does not clear the last write error (it succeeds on a full disk),
// but its failure fails the store like any commit's.
func (s *Store) Ping() error {
	return s.db.update(func(tx *bolt.Tx) error { return nil }, false)
}
