package store

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ListDeliveries returns up to limit deliveries in state, of sink (any sink
// when empty), in batch id order, starting after cursor (empty for the
// first page); next is the cursor of the following page, empty at the end.
// It walks the state index, never every delivery.
func (s *Store) ListDeliveries(state DeliveryState, sink string, limit int, cursor string) (out []Delivery, next string, err error) {
	prefix := []byte(string(state) + "\x00")
	start := prefix
	if cursor != "" {
		after, derr := hex.DecodeString(cursor)
		if derr != nil || !bytes.HasPrefix(after, prefix) {
			return nil, "", fmt.Errorf("bad cursor %q: %w", cursor, ErrBadCursor)
		}
		start = append(after, 0) // the first key after the cursor's
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDeliveryState).Cursor()
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id, sk, ok := strings.Cut(string(k[len(prefix):]), "\x00")
			if !ok || sink != "" && sk != sink {
				continue
			}
			if len(out) == limit {
				last := out[len(out)-1]
				next = hex.EncodeToString(stateKey(&last))
				return nil
			}
			d, err := getDelivery(tx, id, sk)
			if err != nil {
				return err
			}
			out = append(out, *d)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	return out, next, nil
}

// DeliveryCounts returns how many deliveries each sink has in each state,
// from the counts index.
func (s *Store) DeliveryCounts() (map[string]map[DeliveryState]int, error) {
	out := map[string]map[DeliveryState]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDeliveryCounts).ForEach(func(k, v []byte) error {
			sink, state, ok := strings.Cut(string(k), "\x00")
			if !ok || len(v) != 8 {
				return nil
			}
			if out[sink] == nil {
				out[sink] = map[DeliveryState]int{}
			}
			out[sink][DeliveryState(state)] = int(binary.BigEndian.Uint64(v))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read delivery counts: %w", err)
	}
	return out, nil
}

// OldestPendingDeliveries returns, for each sink with a pending delivery,
// when the oldest of them was queued (first key of its queued index).
func (s *Store) OldestPendingDeliveries() (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDeliveryQueued).ForEachBucket(func(name []byte) error {
			if k, _ := tx.Bucket(bucketDeliveryQueued).Bucket(name).Cursor().First(); k != nil {
				at, _ := decodeTimeKey(k)
				out[string(name)] = at
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read oldest pending deliveries: %w", err)
	}
	return out, nil
}
