package store

import (
	"time"
)

// Batch is the durable record of one batch.
//
// Its encoding (batch_encode.go, batch_layout.go) leaves out what is zero
// or repeated: the id is the record's key, so it is not stored again
// (records written before the records bucket still carry it).
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
	// (purge.go); nil before.
	Tombstone *Tombstone `json:"tombstone,omitempty"`
}

// Version returns the version of b's latest export. A record written
// before versions were recorded has none, and its version was then its
// refetch count; in any later record ExportVersion is at least
// Refetches, since every refetch that replaced the export made a new
// version.
func (b *Batch) Version() int { return max(b.ExportVersion, b.Refetches) }

// RetentionStart is when the provider's retention clock started for b: its
// completed_at; when that is unknown, its submission (a batch batchhook
// submitted or tracks: the earliest it can have completed), or else the
// notification's receipt.
func (b *Batch) RetentionStart() time.Time {
	if t := b.Notification.CompletedAt; t != nil {
		return *t
	}
	if !b.SubmittedAt.IsZero() {
		return b.SubmittedAt
	}
	return b.Notification.ReceivedAt
}
