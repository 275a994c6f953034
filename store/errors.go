package store

import (
	"errors"
)

// ErrNotFound is returned when a batch, quarantine entry or event does not exist.
var ErrNotFound = errors.New("not found")

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("database is locked by another process")

// ErrState is returned when a transition is asked of a record (batch,
// delivery, chunk, payment event) in a state that does not allow it (for
// example a checkpoint on a batch no longer fetching). Its text is neutral
// because it ends wrapped errors that already say what the conflict is;
// the admin API drops it from its replies.
var ErrState = errors.New("state conflict")

// ErrBadCursor is returned by the list methods for a cursor they did not issue.
var ErrBadCursor = errors.New("bad cursor")

// ErrExists is returned when a submission id is already used, and by a
// Loader given a record the store already holds (bulk.go).
var ErrExists = errors.New("already exists")

// ErrFailed is returned by every method after a commit failed: the store
// fails closed (no read or write is trusted any more, since the page cache
// may show a commit that never reached the disk) and the daemon exits for
// its supervisor to restart it.
var ErrFailed = errors.New("store failed after a commit error; batchhook must restart")

// ErrSymlink is returned by Open when the database file is a symbolic
// link: it is refused, never followed (a planted link would put the
// database, and its mode, wherever the link points).
var ErrSymlink = errors.New("database file is a symbolic link; refusing to follow it")

// ErrAmbiguous is returned by FindQuarantined when more than one entry's id
// starts with the prefix asked for.
var ErrAmbiguous = errors.New("ambiguous id prefix")

// ErrSlowCommit is returned by the methods that take a context when it ends
// before the commit their answer depends on has returned (a slow disk, or
// a queue of commits before it). Nothing is promised: a write they asked for
// goes on in the background (a retry then finds it once it is durable), or
// never began. The webhooks answer it 503 before their write deadline.
var ErrSlowCommit = errors.New("the commit it depends on has not returned yet")

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("store is closed")

// ErrDeliveryPending is returned by PurgeExport while a delivery of the
// export is pending: it is deleted only once every sink is done with it.
var ErrDeliveryPending = errors.New("a delivery of the export is pending")

// ErrTransition is returned when a write would move a batch between two
// states the state diagram (State) has no arrow for: a bug, not a conflict
// an operator can resolve; nothing is written.
var ErrTransition = errors.New("batch state transition not allowed")
