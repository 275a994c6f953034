package store

import (
	"time"
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
	// worker, possibly until NextAttemptAt after a failed attempt.
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

// Source says how batchhook learned that a batch was final.
const (
	SourceWebhook = "webhook"
	SourcePoll    = "poll"
)

// Notification is one accepted batch.completed delivery. Raw is the body
// exactly as received and signed; the other fields are what validation read
// from it. A counter the body did not carry is nil.
type Notification struct {
	Event          string     `json:"event"`
	BatchID        string     `json:"batch_id"`
	Status         string     `json:"status"`
	TotalRequested *int64     `json:"total_requested"`
	TotalFound     *int64     `json:"total_found"`
	TotalNotFound  *int64     `json:"total_not_found"`
	CompletedAt    *time.Time `json:"completed_at"`
	// Flags lists what looked wrong but was accepted so that a genuine
	// batch is never lost to a rejection the provider retries for ever
	// (counter relations, an unparsable completed_at).
	Flags      []string  `json:"flags,omitempty"`
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Source     string    `json:"source"`
	Raw        []byte    `json:"raw"`
}

// Checkpoint is how far the fetch of a batch got. It is committed only after
// the staged bytes it counts are on disk, so a restart resumes at the next
// page with nothing lost or written twice.
type Checkpoint struct {
	// Cursor is the next_cursor to request next; empty before the first page.
	Cursor string `json:"cursor,omitempty"`
	// Done is true once the page with a null next_cursor is staged.
	Done bool `json:"done"`
	// StagedBytes is the length of the staged results file that the pages
	// so far account for; anything beyond it is cut on resume.
	StagedBytes int64 `json:"staged_bytes"`
	Items       int64 `json:"items"`
	Pages       int64 `json:"pages"`
	// Seen remembers every cursor this fetch was given, so that a cursor
	// that comes back (A→B→A…) is caught at once: the first 8 bytes of
	// each cursor's SHA-256, hex, concatenated (a string keeps Checkpoint
	// comparable and the record small; a batch has at most a few thousand
	// pages). The fetcher reads and extends it.
	Seen string `json:"seen_cursors,omitempty"`
}

// Batch is the durable record of one batch.
//
// Its encoding (layout.go) leaves out what is zero or repeated: the id is
// the record's key, so it is not stored again (records written before issue
// 15 still carry it).
type Batch struct {
	ID           string       `json:"-"`
	State        State        `json:"state"`
	Notification Notification `json:"notification"`
	Checkpoint   Checkpoint   `json:"checkpoint,omitzero"`
	// FetchAttempts counts failed fetch attempts since the last success; it
	// drives the backoff.
	FetchAttempts int       `json:"fetch_attempts,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`
	// ErrorKind classifies LastError (transient, auth, not_found, …).
	ErrorKind  string `json:"error_kind,omitempty"`
	ExportPath string `json:"export_path,omitempty"`
	// Refetch marks a batch an operator asked to fetch again: its new
	// export replaces the existing one instead of deferring to it.
	Refetch bool `json:"refetch,omitempty"`
	// RefetchAt is when the refetch was asked for: an export dated after it
	// is the refetch's own (a crash came between publishing and recording).
	RefetchAt time.Time `json:"refetch_at,omitzero"`
	// Refetches counts the refetches whose new export replaced the
	// previous one.
	Refetches int `json:"refetches,omitempty"`
	// ExportVersion is the version of the batch's latest export: 0 for
	// the first, and each refetch that replaced it or erasure that
	// rewrote it made the next one (the manifest carries it too; see
	// Version).
	ExportVersion int `json:"export_version,omitempty"`
	// ExportRemoved says the export directory was (or is being) removed
	// after every configured sink delivered it, because file is not in
	// BATCHHOOK_SINKS; a redeliver then needs a refetch first.
	ExportRemoved bool      `json:"export_removed,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	FinishedAt    time.Time `json:"finished_at,omitzero"`

	// Submission: set for a batch batchhook submitted (or tracks).
	SubmissionID string `json:"submission_id,omitempty"`
	Chunk        int    `json:"chunk,omitempty"`
	CPFCount     int    `json:"cpf_count,omitempty"`
	// SubmittedAt is when the provider accepted the batch (or when an
	// operator began tracking it); RETENTION counts from it while no
	// completed_at is known.
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	// PollAttempts counts reconciliation polls that found the batch not
	// final (or failed); NextPollAt is when the next one is due.
	PollAttempts int       `json:"poll_attempts,omitempty"`
	NextPollAt   time.Time `json:"next_poll_at,omitzero"`

	// Tombstone is set once the purger removed personal data of the batch
	// (store/purge.go); nil before.
	Tombstone *Tombstone `json:"tombstone,omitempty"`
}

// Version returns the version of b's latest export. A record written
// before versions were recorded has none, and its version was then its
// refetch count; in any later record ExportVersion is at least
// Refetches, since every refetch that replaced the export made a new
// version.
func (b *Batch) Version() int { return max(b.ExportVersion, b.Refetches) }

// Quarantined is a signed delivery that failed validation, kept so that
// nothing genuine is lost. It is keyed by the SHA-256 of the body, so a
// retried bad delivery is kept once.
type Quarantined struct {
	ID         string    `json:"id"`
	Reason     string    `json:"reason"`
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Raw        []byte    `json:"raw"`
	// ErasedBy names the erasure that removed Raw because it held the CPF
	// being erased; ID (the body's SHA-256) is the tombstone.
	ErasedBy string `json:"erased_by,omitempty"`
	// Product is the webhook that received it: empty for batch.completed
	// (entries older than the payments product have none), ProductPayments
	// for the payments webhook. Both share one list (DECISIONS 29).
	Product string `json:"product,omitempty"`
	// BatchID is the body's batch_id when one could be read and is safe
	// (CheckBatchID), so an operator can track the batch; empty otherwise.
	BatchID string `json:"batch_id,omitempty"`
}

// ProductPayments tags what came through the payments webhook (issue 13).
const ProductPayments = "payments"

// AuditEvent is a signed delivery whose event is not batch.completed: kept
// for audit, never fetched. Keyed by the SHA-256 of the body.
type AuditEvent struct {
	ID         string    `json:"id"`
	Event      string    `json:"event"`
	BatchID    string    `json:"batch_id"`
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Raw        []byte    `json:"raw"`
	// ErasedBy: as in Quarantined.
	ErasedBy string `json:"erased_by,omitempty"`
}
