package store

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// State is where a batch is in its life. The states and who moves a batch
// between them are the contract of the pipeline:
//
//	(none) ──submitter: provider accepted a chunk──▶ submitted
//	(none) ──operator: track──▶ tracked
//	(none) | submitted | tracked ──first batch.completed (webhook or poll)──▶ queued
//	submitted | tracked ──reconciler: RETENTION over, or 404 past NOT_FOUND_GRACE──▶ abandoned (final)
//	abandoned with no notification recorded ──a late batch.completed──▶ queued
//	queued ──fetcher: Lease──▶ fetching
//	fetching ──fetcher: Checkpoint──▶ fetching (one page further)
//	fetching ──fetcher: Retry / Restart / Release, or daemon start: ReleaseLeases──▶ queued
//	fetching ──fetcher: Finish──▶ exported | abandoned (final)
//	exported ──purger: EXPORT_RETENTION over, no delivery pending──▶ purged (final)
//	abandoned ──purger: RECORD_RETENTION over──▶ purged (final)
//	exported | abandoned | purged ──operator: Refetch──▶ queued
//
// A purged batch keeps its record as a tombstone (Batch.Tombstone): it stays
// known, so a replayed batch.completed is a duplicate (DECISIONS 21).
//
// The diagram is enforced: transitions holds its arrows, setState refuses
// any other move with ErrTransition, and a test reads the diagram above
// and fails when it and the table differ.
type State string

// The batch states.
const (
	// StateSubmitted: batchhook submitted the batch and waits for its
	// batch.completed; the reconciler polls it after RECONCILE_AFTER.
	StateSubmitted State = "submitted"
	// StateTracked: an operator asked batchhook to watch a batch submitted
	// elsewhere; reconciled like a submitted one.
	StateTracked State = "tracked"
	// StateQueued: a batch.completed was recorded; the batch waits for a
	// worker, possibly until NextAttemptAt after a failed attempt (an
	// operator's RetryNow makes it due at once, in the same state).
	StateQueued State = "queued"
	// StateFetching: one worker holds the batch and pages its results.
	StateFetching State = "fetching"
	// StateExported: the export directory is complete and in place. Final.
	StateExported State = "exported"
	// StateAbandoned: batchhook gave up (retention over, results gone, the
	// provider refused the request); LastError says why. Final.
	StateAbandoned State = "abandoned"
	// StatePurged: the purger deleted the batch's export (EXPORT_RETENTION)
	// or reduced its record (RECORD_RETENTION); Tombstone says what is
	// left. Final.
	StatePurged State = "purged"
)

// Final reports whether no worker will touch a batch in state s again.
func (s State) Final() bool { return s == StateExported || s == StateAbandoned || s == StatePurged }

// Awaiting reports whether a batch in state s waits for its first
// batch.completed: a webhook for it is accepted, not a duplicate.
func (s State) Awaiting() bool { return s == StateSubmitted || s == StateTracked }

// awaitingNotification reports whether b still waits for its first
// batch.completed, so that one is accepted (and queued), not answered as a
// duplicate: submitted or tracked, or abandoned by the reconciler before
// any notification was recorded (the provider may still keep the results).
func (b *Batch) awaitingNotification() bool {
	return b.State.Awaiting() || b.State == StateAbandoned && b.Notification.Event == ""
}

// States lists every batch state, in pipeline order (for metrics and docs).
var States = []State{StateSubmitted, StateTracked, StateQueued, StateFetching, StateExported, StateAbandoned, StatePurged}

// transitions is the diagram on State as a table: from each state (""
// for a batch not yet recorded) the states setState may move a batch to.
// Staying in a state is no move and always allowed (Checkpoint keeps a
// batch fetching). Some arrows hold only under a condition their caller
// checks (abandoned → queued only while no notification is recorded).
var transitions = map[State][]State{
	"":             {StateSubmitted, StateTracked, StateQueued},
	StateSubmitted: {StateQueued, StateAbandoned},
	StateTracked:   {StateQueued, StateAbandoned},
	StateQueued:    {StateFetching},
	StateFetching:  {StateQueued, StateExported, StateAbandoned},
	StateExported:  {StatePurged, StateQueued},
	StateAbandoned: {StateQueued, StatePurged},
	StatePurged:    {StateQueued},
}

// allowed reports whether transitions has the move from → to.
func allowed(from, to State) bool { return slices.Contains(transitions[from], to) }

// stateName names s in an error: "(none)" for a batch not yet recorded.
func stateName(s State) string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// setState moves b to state to, keeping the counts and the pending, purge,
// leased and awaiting indexes right. Every state change goes through it; a move transitions does not
// hold is refused with ErrTransition and changes nothing.
func setState(tx *bolt.Tx, b *Batch, to State) error {
	from := b.State
	if from == to {
		return nil
	}
	if !allowed(from, to) {
		return fmt.Errorf("batch %s: %s → %s: %w", b.ID, stateName(from), stateName(to), ErrTransition)
	}
	if from != "" {
		if err := addCount(tx, from, -1); err != nil {
			return err
		}
	}
	if err := addCount(tx, to, 1); err != nil {
		return err
	}
	key := timeKey(b.CreatedAt, b.ID)
	switch {
	case to.Final():
		if err := tx.Bucket(bucketPending).Delete(key); err != nil {
			return err
		}
	case from == "" || from.Final():
		pending := tx.Bucket(bucketPending)
		pending.FillPercent = appendFill
		if err := pending.Put(key, nil); err != nil {
			return err
		}
	}
	if err := indexForPurge(tx, b, from, to); err != nil {
		return err
	}
	if err := indexByState(tx, b, from, to); err != nil {
		return err
	}
	if err := indexLease(tx, b.ID, from, to); err != nil {
		return err
	}
	b.State = to
	// Membership follows the new state (and whether a notification is
	// recorded, so set b.Notification first); Delete of an absent key
	// writes nothing. A change that makes the batch known (Known) must be
	// marked by its caller (durableDB.mark): RecordContext and
	// PurgeRecords do.
	aw := tx.Bucket(bucketAwaiting)
	if b.awaitingNotification() {
		return aw.Put([]byte(b.ID), nil)
	}
	return aw.Delete([]byte(b.ID))
}
