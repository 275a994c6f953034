package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Quarantined is a signed delivery that failed validation, kept so that
// an operator can see what came. It is keyed by the SHA-256 of the body as
// it came, so a retried bad delivery is kept once. Raw is that body with
// every CPF-shaped run masked (cpf.ScrubBytes): nothing kept for the
// retention period holds a CPF (DECISIONS 40).
type Quarantined struct {
	ID         string    `json:"id"`
	Reason     string    `json:"reason"`
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Raw        []byte    `json:"raw"`
	// BodyLen is the length of the body as it came (ID is its SHA-256);
	// Masked says Raw differs from it: some digits are '*'.
	BodyLen int  `json:"body_len,omitempty"`
	Masked  bool `json:"masked,omitempty"`
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

// ProductPayments tags what came through the payments webhook.
const ProductPayments = "payments"

// ListQuarantined returns up to limit quarantine entries after cursor (an
// entry id; empty for the first page), in id order, without their raw
// bodies; next is empty at the end.
func (s *Store) ListQuarantined(limit int, cursor string) (entries []Quarantined, next string, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQuarantine).Cursor()
		k, v := c.First()
		if cursor != "" {
			if k, v = c.Seek([]byte(cursor)); k != nil && string(k) == cursor {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(entries) == limit {
				next = entries[len(entries)-1].ID
				return nil
			}
			var q Quarantined
			if err := json.Unmarshal(v, &q); err != nil {
				return fmt.Errorf("decode quarantine entry: %w", err)
			}
			q.Raw = nil
			maskQuarantined(&q)
			entries = append(entries, q)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list quarantine: %w", err)
	}
	return entries, next, nil
}

// Quarantine keeps a signed but invalid delivery. An entry with the same
// body hash is kept once; the call then writes nothing.
func (s *Store) Quarantine(q Quarantined) error {
	return s.QuarantineContext(context.Background(), q)
}

// QuarantineContext is Quarantine for a caller with a deadline
// (ErrSlowCommit, as RecordContext).
func (s *Store) QuarantineContext(ctx context.Context, q Quarantined) error {
	return s.putOnce(ctx, bucketQuarantine, q.ID, q)
}

// GetQuarantined returns the quarantine entry id, or ErrNotFound. An
// entry an earlier version kept unmasked is masked as it is read (Open
// masks them all once, maskKeptBodies).
func (s *Store) GetQuarantined(id string) (*Quarantined, error) {
	var q Quarantined
	if err := s.getJSON(bucketQuarantine, id, &q); err != nil {
		return &q, err
	}
	maskQuarantined(&q)
	return &q, nil
}

// CountQuarantined returns the number of quarantine entries.
func (s *Store) CountQuarantined() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketQuarantine).Stats().KeyN
		return nil
	})
	return n, err
}

// bucketQuarantine holds the quarantined deliveries, keyed by the body's
// SHA-256.
var bucketQuarantine = []byte("quarantine")
