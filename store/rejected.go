package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketRejected is the ring of the last rejected (401) deliveries, keyed
// by a big-endian sequence number.
var bucketRejected = []byte("rejected")

// MaxRejectedBody is how much of a rejected body is kept.
const MaxRejectedBody = 8 << 10

// MaxRejectedSignature is how much of the signature header value is kept
// (a correct one has 88 characters).
const MaxRejectedSignature = 256

// Rejected is a delivery refused with 401, kept so that an operator can
// check it with `batchhook verify --rejected ID`: the first MaxRejectedBody
// bytes of the body, the signature header as sent, and why it failed, the
// body and header with every CPF-shaped run masked. It is a stranger's
// request until proven otherwise: nothing acts on it.
type Rejected struct {
	ID         uint64    `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	// Path is the webhook path it came to; Product is "" (batch) or
	// ProductPayments.
	Path    string `json:"path"`
	Product string `json:"product,omitempty"`
	// Reason is the signature check's verdict (signature.Reason).
	Reason     string `json:"reason"`
	Signature  string `json:"signature"`
	RemoteAddr string `json:"remote_addr,omitempty"`
	// BodyLen and BodySHA256 describe the whole body; Raw holds its first
	// MaxRejectedBody bytes (Truncated when that is not all of it).
	BodyLen    int    `json:"body_len"`
	BodySHA256 string `json:"body_sha256"`
	Truncated  bool   `json:"truncated,omitempty"`
	Raw        []byte `json:"raw,omitempty"`
	// Masked says Raw or Signature had CPF-shaped runs, now masked
	// (cpf.ScrubBytes): they are no longer the bytes that came.
	Masked bool `json:"masked,omitempty"`
	// ErasedBy names the erasure that removed Raw because it held the CPF
	// being erased.
	ErasedBy string `json:"erased_by,omitempty"`
}

// KeepRejected adds rs to the ring in one transaction and drops the
// oldest entries beyond keep (keep < 1 keeps none). It is called off the
// reply path: a 401 never waits for it.
func (s *Store) KeepRejected(rs []Rejected, keep int) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRejected)
		var last uint64
		for _, r := range rs {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			r.ID, last = seq, seq
			v, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("encode: %w", err)
			}
			if err := b.Put(rejectedKey(seq), v); err != nil {
				return err
			}
		}
		if last == 0 {
			last = b.Sequence()
		}
		// Keys are sequential: everything at or below last-keep goes.
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k)+uint64(max(keep, 0)) <= last; k, _ = c.First() {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep rejected deliveries: %w", err)
	}
	return nil
}

// ListRejected returns the kept rejected deliveries, newest first, without
// their bodies.
func (s *Store) ListRejected() ([]Rejected, error) {
	var out []Rejected
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRejected).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var r Rejected
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode entry %x: %w", k, err)
			}
			r.Raw = nil
			maskRejected(&r)
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list rejected deliveries: %w", err)
	}
	return out, nil
}

// GetRejected returns one kept rejected delivery by its id, or ErrNotFound.
func (s *Store) GetRejected(id string) (*Rejected, error) {
	seq, err := strconv.ParseUint(id, 10, 64)
	if err != nil || seq == 0 {
		return nil, ErrNotFound
	}
	var r Rejected
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRejected).Get(rejectedKey(seq))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &r)
	})
	if err != nil {
		return nil, err
	}
	maskRejected(&r) // one an earlier version kept unmasked
	return &r, nil
}

// PurgeRejected is PurgeQuarantine for the rejected deliveries.
func (s *Store) PurgeRejected(before time.Time, after string, limit int) (int, string, error) {
	n, next, err := s.sweepReceived(bucketRejected, before, after, limit)
	if err != nil {
		return 0, "", fmt.Errorf("purge rejected deliveries: %w", err)
	}
	return n, next, nil
}

func rejectedKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}
