package store

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/cpf"
)

// Erasures of one person's data (LGPD art. 18). The record
// keeps only cpf.KeyedHash of the CPF under a key made at first start and
// kept in the meta bucket: enough to recognise the CPF again (in data that
// arrives later, or when a crash interrupted the erasure), never enough to
// recover it without the database. The buckets:
//   - erasures: id ("er" + 10 digits, in request order) → Erasure;
//   - meta, key erasureKeyName: the 32-byte HMAC key.
//
// The erasures bucket is made by the first erasure, so that a database
// that never erased anything reads as before.
var bucketErasures = []byte("erasures")

const erasureKeyName = "erasure_hmac_key"

// ErasureState is where an erasure is:
//
//	(none) ──operator: POST /admin/erasures──▶ pending (recorded before any file is touched)
//	pending ──the erasure service, after exports, chunks and bodies──▶ done
//	pending ──daemon start (a crash interrupted it)──▶ resumed, then done
type ErasureState string

// The erasure states.
const (
	ErasurePending ErasureState = "pending"
	ErasureDone    ErasureState = "done"
)

// Erasure is the durable record of one erasure: what it removed, and where
// else the data went (DECISIONS 24: sinks that already received it are
// listed, not reached into).
type Erasure struct {
	ID string `json:"id"`
	// Hash is cpf.KeyedHash of the normalized CPF; the CPF itself is kept
	// nowhere.
	Hash        string       `json:"cpf_hmac"`
	State       ErasureState `json:"state"`
	RequestedAt time.Time    `json:"requested_at"`
	DoneAt      time.Time    `json:"done_at,omitzero"`
	// Previous names the latest earlier erasure of the same CPF.
	Previous string          `json:"previous,omitempty"`
	Batches  []ErasedBatch   `json:"batches,omitempty"`
	Chunks   []ErasedChunk   `json:"chunks,omitempty"`
	Bodies   []ErasedBody    `json:"bodies,omitempty"`
	Payments []ErasedPayment `json:"payments,omitempty"`
	// Unrewritten lists the batches whose export could not be rewritten
	// (it does not match its manifest, a link is in its place, a write
	// failed): they may still hold the CPF. Erasing the CPF again retries
	// them; the log line erasure_export_failed says why.
	Unrewritten []string `json:"unrewritten,omitempty"`
}

// Touched reports whether the erasure removed anything.
func (e *Erasure) Touched() bool {
	return len(e.Batches)+len(e.Chunks)+len(e.Bodies)+len(e.Payments) > 0
}

// ErasedBatch is one export the erasure rewrote.
type ErasedBatch struct {
	BatchID string `json:"batch_id"`
	// Items is how many items were removed from the export.
	Items int64 `json:"items"`
	// Version is the export's version once rewritten (summed notes of a
	// resumed erasure keep the latest).
	Version int `json:"version,omitempty"`
	// Sinks are the sinks that had already received the export (or may
	// have): the operator erases there too.
	Sinks []SinkReceipt `json:"sinks,omitempty"`
}

// The values of SinkReceipt.Received.
const (
	ReceivedDelivered = "delivered"
	// ReceivedMaybe: a delivery was under way (or failed) and may have
	// left items at the sink: parts acknowledged, an attempt that reached
	// the sink, or an attempt the change cut short (mayHaveReceived).
	ReceivedMaybe = "may_have_received"
)

// SinkReceipt says that a sink had received an export before it was
// rewritten.
type SinkReceipt struct {
	Sink     string `json:"sink"`
	Received string `json:"received"`
	// Version is the export version the sink received (Delivery.Version).
	Version int `json:"version"`
}

// ErasedChunk is one submission chunk the CPF was removed from.
type ErasedChunk struct {
	SubmissionID string     `json:"submission_id"`
	Index        int        `json:"index"`
	State        ChunkState `json:"state"`
	// CPFs is how many were removed (0 when InFlight).
	CPFs int `json:"cpfs"`
	// Ended: the chunk held nothing else and was ended as failed.
	Ended bool `json:"ended,omitempty"`
	// InFlight: the chunk was being sent and was left alone; the provider
	// has received the CPF. Its CPFs are dropped once accepted; should it
	// come back to waiting, erasing the CPF again removes it.
	InFlight bool `json:"in_flight,omitempty"`
}

// ErasedBody is a quarantined or audit body that held the CPF: its raw
// bytes are gone, its id (the SHA-256 of the body) stays as the tombstone.
type ErasedBody struct {
	Kind string `json:"kind"` // "quarantine" or "audit"
	ID   string `json:"id"`
}

// ErasedPayment is a payment event whose body held the CPF (see
// Store.ErasePayments): the body is gone, the event keeps its sha256.
type ErasedPayment struct {
	Seq    uint64 `json:"seq"`
	SHA256 string `json:"sha256"`
	// Sinks are the payment sinks that had already received the event
	// (DECISIONS 24: listed, not reached into).
	Sinks []string `json:"sinks,omitempty"`
}

// ErasureKey returns the HMAC key of erasures, making it (32 bytes from
// crypto/rand) on the first call: the daemon calls it at start. It lives as
// long as the database; a lost key only means earlier erasures can no
// longer recognise new data, so it is backed up with the database.
func (s *Store) ErasureKey() ([]byte, error) {
	var key []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		key = readKey(tx)
		return nil
	})
	if err != nil || key != nil {
		return key, err
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("make erasure key: %w", err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if key = readKey(tx); key != nil {
			return nil // another caller made it first
		}
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketMeta, err)
		}
		key = fresh
		return b.Put([]byte(erasureKeyName), fresh)
	})
	if err != nil {
		return nil, fmt.Errorf("store erasure key: %w", err)
	}
	return key, nil
}

func readKey(tx *bolt.Tx) []byte {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return nil
	}
	if v := b.Get([]byte(erasureKeyName)); len(v) == 32 {
		return append([]byte(nil), v...)
	}
	return nil
}

// BeginErasure records an erasure of the CPF whose keyed hash is hash, as
// pending, before anything is touched: a crash from here on is resumed at
// the next start. A pending erasure of the same hash is returned as is
// (created false) instead of a second one.
func (s *Store) BeginErasure(hash string, now time.Time) (e *Erasure, created bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketErasures)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketErasures, err)
		}
		var prev string
		err = b.ForEach(func(_, v []byte) error {
			var old Erasure
			if err := json.Unmarshal(v, &old); err != nil {
				return fmt.Errorf("decode erasure: %w", err)
			}
			if old.Hash != hash {
				return nil
			}
			if old.State == ErasurePending {
				e = &old
			}
			prev = old.ID
			return nil
		})
		if err != nil || e != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		e = &Erasure{ID: fmt.Sprintf("er%010d", seq), Hash: hash, State: ErasurePending, RequestedAt: now, Previous: prev}
		created = true
		return putJSON(b, e.ID, e)
	})
	if err != nil {
		return nil, false, fmt.Errorf("record erasure: %w", err)
	}
	return e, created, nil
}

// updateErasure changes the pending erasure id in tx.
func updateErasure(tx *bolt.Tx, id string, fn func(e *Erasure) error) error {
	b := tx.Bucket(bucketErasures)
	if b == nil {
		return fmt.Errorf("erasure %s: %w", id, ErrNotFound)
	}
	v := b.Get([]byte(id))
	if v == nil {
		return fmt.Errorf("erasure %s: %w", id, ErrNotFound)
	}
	var e Erasure
	if err := json.Unmarshal(v, &e); err != nil {
		return fmt.Errorf("decode erasure %s: %w", id, err)
	}
	if e.State != ErasurePending {
		return fmt.Errorf("erasure %s is %s: %w", id, e.State, ErrState)
	}
	if err := fn(&e); err != nil {
		return err
	}
	return putJSON(b, id, &e)
}

// noteBatch adds eb to e's batches, adding up with an earlier note of the
// same batch (a resumed erasure finds the rest; RecordRewrite calls it).
func noteBatch(e *Erasure, eb ErasedBatch) {
	for i := range e.Batches {
		if e.Batches[i].BatchID == eb.BatchID {
			e.Batches[i].Items += eb.Items
			e.Batches[i].Version = max(e.Batches[i].Version, eb.Version)
			e.Batches[i].Sinks = mergeReceipts(e.Batches[i].Sinks, eb.Sinks)
			return
		}
	}
	e.Batches = append(e.Batches, eb)
}

func mergeReceipts(old, add []SinkReceipt) []SinkReceipt {
	out := append([]SinkReceipt(nil), old...)
	for _, r := range add {
		found := false
		for _, o := range out {
			found = found || o == r
		}
		if !found {
			out = append(out, r)
		}
	}
	return out
}

// FinishErasure marks erasure id done, with the batches whose export could
// not be rewritten, and returns it.
func (s *Store) FinishErasure(id string, unrewritten []string, now time.Time) (*Erasure, error) {
	var out Erasure
	err := s.db.Update(func(tx *bolt.Tx) error {
		return updateErasure(tx, id, func(e *Erasure) error {
			e.State, e.DoneAt, e.Unrewritten = ErasureDone, now, unrewritten
			out = *e
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("finish erasure: %w", err)
	}
	return &out, nil
}

// Erasures returns every erasure, oldest first; pendingOnly keeps those a
// crash interrupted (the daemon resumes them at start).
func (s *Store) Erasures(pendingOnly bool) ([]Erasure, error) {
	var out []Erasure
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketErasures)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var e Erasure
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode erasure %s: %w", k, err)
			}
			if !pendingOnly || e.State == ErasurePending {
				out = append(out, e)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list erasures: %w", err)
	}
	return out, nil
}

// ErasureMatcher returns a function that reports whether a normalized CPF
// was the subject of an erasure (pending or done), or nil when none was
// ever made. The fetcher's publish step filters staged items with it, so
// that no export published after an erasure was recorded holds its CPF.
func (s *Store) ErasureMatcher() (func(digits string) bool, error) {
	var (
		key    []byte
		hashes map[string]bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketErasures)
		if b == nil {
			return nil
		}
		key = readKey(tx)
		hashes = map[string]bool{}
		return b.ForEach(func(k, v []byte) error {
			var e Erasure
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode erasure %s: %w", k, err)
			}
			hashes[e.Hash] = true
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read erasures: %w", err)
	}
	if len(hashes) == 0 {
		return nil, nil
	}
	if key == nil {
		return nil, errors.New("read erasures: erasures recorded but the erasure key is missing")
	}
	return func(digits string) bool { return hashes[cpf.KeyedHash(key, digits)] }, nil
}
