package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// SubmissionSummary is a submission with how many of its chunks are in
// each state: what a list of submissions shows.
type SubmissionSummary struct {
	Submission
	ChunkStates map[ChunkState]int
}

// ListSubmissions returns up to limit submissions, newest first, from
// after cursor ("" = the newest), and the cursor of the next page ("" at
// the end); ErrBadCursor for a cursor it did not issue. It walks the chunks
// bucket, whose keys start with the submission's sequence number, so a
// page reads only its own submissions' chunks; every submission has at
// least one chunk (an intake without a valid CPF is not stored).
func (s *Store) ListSubmissions(limit int, cursor string) (out []SubmissionSummary, next string, err error) {
	var before []byte // the sequence number the page starts below
	if cursor != "" {
		if before, err = hex.DecodeString(cursor); err != nil || len(before) != 8 {
			return nil, "", fmt.Errorf("bad cursor %q: %w", cursor, ErrBadCursor)
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChunks).Cursor()
		var k, v []byte
		if before == nil {
			k, v = c.Last()
		} else if k, _ = c.Seek(before); k != nil {
			k, v = c.Prev() // Seek lands on the cursor's first chunk (or after it): step back
		} else {
			k, v = c.Last()
		}
		subs := tx.Bucket(bucketSubmissions)
		for k != nil {
			seq := append([]byte(nil), k[:8]...)
			if len(out) == limit {
				next = hex.EncodeToString(out[len(out)-1].seqKey())
				return nil
			}
			sum := SubmissionSummary{ChunkStates: map[ChunkState]int{}}
			var id string
			for ; k != nil && bytes.Equal(k[:8], seq); k, v = c.Prev() {
				var ch struct {
					SubmissionID string     `json:"submission_id"`
					State        ChunkState `json:"state"`
				}
				if err := json.Unmarshal(v, &ch); err != nil {
					return fmt.Errorf("decode chunk: %w", err)
				}
				id = ch.SubmissionID
				sum.ChunkStates[ch.State]++
			}
			raw := subs.Get([]byte(id))
			if raw == nil {
				return fmt.Errorf("chunks of submission %s without its record: %w", id, ErrNotFound)
			}
			if err := json.Unmarshal(raw, &sum.Submission); err != nil {
				return fmt.Errorf("decode submission %s: %w", id, err)
			}
			out = append(out, sum)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list submissions: %w", err)
	}
	return out, next, nil
}

// seqKey is the submission's sequence number as its chunk keys begin.
func (s Submission) seqKey() []byte { return chunkKey(s.Seq, 0)[:8] }
