package store

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sentKeep bounds how long the sent index remembers a submission; the
// rolling window it serves is one minute.
const sentKeep = time.Hour

// RecentSends returns the times of the submission attempts that reached
// the provider since since, oldest first (the rate limiter's memory across
// restarts). Each is the time the answer came (or the attempt was given
// up), never earlier than the provider saw the request.
func (s *Store) RecentSends(since time.Time) ([]time.Time, error) {
	var out []time.Time
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSent).Cursor()
		for k, _ := c.Seek(timeKey(since, "")); k != nil; k, _ = c.Next() {
			out = append(out, time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read recent submissions: %w", err)
	}
	return out, nil
}

// addSent notes an attempt that reached the provider at (or before) at,
// and forgets those older than sentKeep.
func addSent(tx *bolt.Tx, at time.Time, ref string) error {
	if err := tx.Bucket(bucketSent).Put(timeKey(at, ref), nil); err != nil {
		return err
	}
	return pruneSent(tx, at.Add(-sentKeep))
}

func pruneSent(tx *bolt.Tx, before time.Time) error {
	c := tx.Bucket(bucketSent).Cursor()
	limit := timeKey(before, "")
	for k, _ := c.First(); k != nil && string(k) < string(limit); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
