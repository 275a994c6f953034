package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketMeta holds named values that are made once and then never change
// for the life of the database (StableID).
var bucketMeta = []byte("meta")

// StableID returns the value stored under name, creating it on the first
// call as "batchhook-" followed by 16 random hex digits. The value lives
// as long as the database, so a component that must keep one identity
// across restarts (the Kafka sink's transactional id) gets the same one
// after every restart and a new one only on a new data directory. The
// creation is one durable transaction: two callers racing get one value.
func (s *Store) StableID(name string) (string, error) {
	if name == "" {
		return "", errors.New("stable id: empty name")
	}
	var id string
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			id = string(b.Get([]byte(name)))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read stable id %s: %w", name, err)
	}
	if id != "" {
		return id, nil
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("make stable id %s: %w", name, err)
	}
	fresh := "batchhook-" + hex.EncodeToString(raw[:])
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketMeta, err)
		}
		if v := b.Get([]byte(name)); v != nil {
			id = string(v) // another caller made it first
			return nil
		}
		id = fresh
		return b.Put([]byte(name), []byte(fresh))
	})
	if err != nil {
		return "", fmt.Errorf("store stable id %s: %w", name, err)
	}
	return id, nil
}
