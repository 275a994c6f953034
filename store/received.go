package store

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Quarantine and audit entries are signed deliveries kept whole, each
// keyed by the SHA-256 of its body; they are written and read alike.

// putOnce keeps v under id in bucket unless an entry is there: a
// webhook's write, through the group commit. An entry found was perhaps
// written by the commit under way; then it waits for that one.
func (s *Store) putOnce(ctx context.Context, bucket []byte, id string, v any) error {
	key := lookupKey(bucket, id)
	var exists bool
	snap, err := s.db.viewAt(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bucket).Get([]byte(id)) != nil
		return nil
	})
	if err == nil && exists {
		err = s.db.settled(ctx, key, snap)
	}
	if err != nil {
		return fmt.Errorf("look up %s entry: %w", bucket, err)
	}
	if exists {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s entry: %w", bucket, err)
	}
	res := s.write(ctx, fmt.Sprintf("store %s entry", bucket), func(tx *bolt.Tx) (writeRes, error) {
		b := tx.Bucket(bucket)
		if b.Get([]byte(id)) != nil {
			return writeRes{}, nil
		}
		s.db.mark(tx, key)
		return writeRes{created: true}, b.Put([]byte(id), data)
	})
	return res.err
}

func (s *Store) getJSON(bucket []byte, id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucket).Get([]byte(id))
		if data == nil {
			return ErrNotFound
		}
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("decode %s entry %s: %w", bucket, id, err)
		}
		return nil
	})
}
