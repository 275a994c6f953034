package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The sweeps below walk buckets keyed by body hash or by submission, which
// no date orders: each call examines at most limit entries after the resume
// point in one short transaction, so a pass over a large bucket never holds
// the writer long (the receiver's commits wait behind it).

// PurgeQuarantine deletes the quarantine entries received at or before
// before, examining up to limit entries after after (empty: from the
// start). It returns how many it deleted and where the next call resumes
// (empty at the end).
func (s *Store) PurgeQuarantine(before time.Time, after string, limit int) (int, string, error) {
	n, next, err := s.sweepReceived(bucketQuarantine, before, after, limit)
	if err != nil {
		return 0, "", fmt.Errorf("purge quarantine: %w", err)
	}
	return n, next, nil
}

// PurgeAudit is PurgeQuarantine for the audit bucket (signed events other
// than batch.completed).
func (s *Store) PurgeAudit(before time.Time, after string, limit int) (int, string, error) {
	n, next, err := s.sweepReceived(bucketEvents, before, after, limit)
	if err != nil {
		return 0, "", fmt.Errorf("purge audit events: %w", err)
	}
	return n, next, nil
}

func (s *Store) sweepReceived(bucket []byte, before time.Time, after string, limit int) (n int, next string, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		keys, vals, more := walkAfter(bk, after, limit)
		if more {
			next = string(keys[len(keys)-1])
		}
		for i, k := range keys {
			var e struct {
				ReceivedAt time.Time `json:"received_at"`
			}
			if err := json.Unmarshal(vals[i], &e); err != nil {
				return fmt.Errorf("decode entry %x: %w", k, err)
			}
			if e.ReceivedAt.After(before) {
				continue
			}
			if err := bk.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, next, err
}

// walkAfter returns up to limit keys (with copies of their values) after
// after; more is true when entries remain beyond them.
func walkAfter(b *bolt.Bucket, after string, limit int) (keys, vals [][]byte, more bool) {
	c := b.Cursor()
	k, v := c.First()
	if after != "" {
		if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
			k, v = c.Next()
		}
	}
	for ; k != nil; k, v = c.Next() {
		if len(keys) == limit {
			return keys, vals, true
		}
		keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
	}
	return keys, vals, false
}

// PurgeChunkCPFs deletes the CPFs of failed and submit_unknown chunks last
// changed at or before before, examining up to limit chunks after after
// (empty: from the start). Each such chunk keeps its counts and is marked
// CPFsPurged, so a resend fails saying why. It returns how many chunks lost
// their CPFs and where the next call resumes (empty at the end).
func (s *Store) PurgeChunkCPFs(before time.Time, after string, limit int) (n int, next string, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		keys, vals, more := walkAfter(tx.Bucket(bucketChunks), after, limit)
		if more {
			next = string(keys[len(keys)-1])
		}
		for i, v := range vals {
			if !bytes.Contains(v, []byte(`"cpfs":`)) {
				continue
			}
			c, err := getChunk(tx, keys[i])
			if err != nil {
				return err
			}
			if c.State != ChunkFailed && c.State != ChunkUnknown || c.UpdatedAt.After(before) {
				continue
			}
			c.CPFs, c.CPFsPurged = nil, true
			if err := putChunk(tx, c); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("purge chunk CPFs: %w", err)
	}
	return n, next, nil
}
