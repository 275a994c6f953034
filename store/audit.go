package store

import (
	"context"
	"time"
)

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

// Audit keeps a signed delivery of another event. An identical body is kept
// once; the call then writes nothing.
func (s *Store) Audit(e AuditEvent) error {
	return s.AuditContext(context.Background(), e)
}

// AuditContext is Audit for a caller with a deadline (ErrSlowCommit, as
// RecordContext).
func (s *Store) AuditContext(ctx context.Context, e AuditEvent) error {
	return s.putOnce(ctx, bucketEvents, e.ID, e)
}

// GetAudit returns the audit entry id, or ErrNotFound.
func (s *Store) GetAudit(id string) (*AuditEvent, error) {
	var e AuditEvent
	return &e, s.getJSON(bucketEvents, id, &e)
}

// bucketEvents holds the audit entries, keyed by the body's SHA-256.
var bucketEvents = []byte("events")
