package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Indexes kept beside the batch records, each updated in the transaction
// that changes the record, so that the admin API and the metrics never scan
// every record:
//   - records (batch_layout.go) is itself keyed by (position, id), the order
//     batches were first recorded in, so it lists newest first without an
//     index of its own (List's cursor is a records key: cursors handed
//     out before the layout changed restart at the newest);
//   - pending: (created time, id) for batches not in a final state, whose
//     first key is the oldest batch not yet exported;
//   - counts: the number of batches in each state;
//   - awaiting: the ids of batches still waiting for their first
//     batch.completed (Batch.awaitingNotification), so that Known answers a
//     webhook without decoding the record.
var (
	// bucketCreated was the listing index before the records bucket
	// (batch_layout.go) took its place; migrateLayout drops it.
	bucketCreated  = []byte("created")
	bucketPending  = []byte("pending")
	bucketCounts   = []byte("counts")
	bucketAwaiting = []byte("awaiting")
)

func timeKey(at time.Time, id string) []byte {
	k := make([]byte, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano()))
	copy(k[8:], id)
	return k
}

func addCount(tx *bolt.Tx, s State, delta int64) error {
	return addCountIn(tx.Bucket(bucketCounts), string(s), delta)
}

func addCountIn(b *bolt.Bucket, s string, delta int64) error {
	var n int64
	if v := b.Get([]byte(s)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += delta
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, uint64(n))
	return b.Put([]byte(s), v)
}

// Counts returns how many batches are in each state.
func (s *Store) Counts() (map[State]int, error) {
	counts := map[State]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCounts).ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				counts[State(k)] = int(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read counts: %w", err)
	}
	return counts, nil
}

// OldestPending returns when the oldest batch not yet in a final state was
// recorded; ok is false when there is none.
func (s *Store) OldestPending() (at time.Time, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketPending).Cursor().First()
		if k != nil {
			at, ok = time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))), true
		}
		return nil
	})
	return at, ok, err
}

// OldestPendingByState returns, for each state not final that holds at
// least one batch, when its oldest batch was recorded: the pending index's
// time, as OldestPending's. A state with no batch is absent. It walks the
// pending index oldest first, reading each batch's state, and stops once
// every state the counts show non-empty has its time: a few reads while
// the oldest batches are spread over the states, the whole index at worst
// (a state whose only batches are the newest).
func (s *Store) OldestPendingByState() (map[State]time.Time, error) {
	out := map[State]time.Time{}
	err := s.db.View(func(tx *bolt.Tx) error {
		counts := tx.Bucket(bucketCounts)
		want := 0
		for _, st := range States {
			if v := counts.Get([]byte(st)); !st.Final() && len(v) == 8 && int64(binary.BigEndian.Uint64(v)) > 0 {
				want++
			}
		}
		c := tx.Bucket(bucketPending).Cursor()
		for k, _ := c.First(); k != nil && len(out) < want; k, _ = c.Next() {
			b, err := getBatch(tx, string(k[8:]))
			if errors.Is(err, ErrNotFound) {
				continue // stale entry: no such batch
			}
			if err != nil {
				return err
			}
			if _, seen := out[b.State]; !seen && !b.State.Final() {
				out[b.State] = time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the oldest pending batch of each state: %w", err)
	}
	return out, nil
}

// List returns up to limit batches, newest first, in state (any state when
// empty), starting after cursor (empty for the first page). next is the
// cursor of the following page, empty at the end.
func (s *Store) List(state State, limit int, cursor string) (batches []Batch, next string, err error) {
	var after []byte
	if cursor != "" && !strings.HasPrefix(cursor, stateCursorPrefix) {
		if after, err = hex.DecodeString(cursor); err != nil || len(after) < 8 {
			return nil, "", fmt.Errorf("bad cursor %q: %w", cursor, ErrBadCursor)
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if state != "" && stateIndexed(tx) {
			batches, next, err = listByState(tx, state, limit, cursor)
			return err
		}
		if strings.HasPrefix(cursor, stateCursorPrefix) {
			return fmt.Errorf("bad cursor %q (a list by state's, for another list): %w", cursor, ErrBadCursor)
		}
		c := tx.Bucket(bucketRecords).Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.Last()
		} else if k, _ = c.Seek(after); k != nil {
			k, v = c.Prev() // Seek lands on the cursor key (or after it): step back
		} else {
			k, v = c.Last()
		}
		var lastK []byte
		for ; k != nil; k, v = c.Prev() {
			b, err := decodeBatch(string(k[8:]), v)
			if err != nil {
				return err
			}
			if state != "" && b.State != state {
				continue
			}
			if len(batches) == limit {
				next = hex.EncodeToString(lastK)
				return nil
			}
			batches = append(batches, *b)
			lastK = k
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list batches: %w", err)
	}
	return batches, next, nil
}
