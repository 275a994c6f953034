package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Submissions and their chunks. A submission is one intake (a file of
// CPFs) split into chunks of at most 1,000; the submitter sends the chunks
// to the provider one at a time, in order, within the provider's limits.
// The buckets:
//   - submissions: id → Submission;
//   - chunks: (submission seq, chunk index) → Chunk, in intake order;
//   - chunkq: the keys of chunks not yet handed to the provider (waiting,
//     or sending when a crash interrupted), so the head is the next to send;
//   - chunkcounts: the number of chunks in each ChunkState;
//   - sent: (time, batch id) of recent submissions, so that the rolling
//     rate limit survives a restart.
var (
	bucketSubmissions = []byte("submissions")
	bucketChunks      = []byte("chunks")
	bucketChunkQueue  = []byte("chunkq")
	bucketChunkCounts = []byte("chunkcounts")
	bucketSent        = []byte("sent")
)

// Submission is one intake of CPFs.
type Submission struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
	// Counts from the intake: values read, valid unique CPFs, duplicates
	// dropped, invalid values reported back.
	Lines      int `json:"lines"`
	Valid      int `json:"valid"`
	Duplicates int `json:"duplicates"`
	Invalid    int `json:"invalid"`
	Chunks     int `json:"chunks"`
	// Erased counts the CPFs erasures removed from the chunks (Valid no
	// longer counts them).
	Erased int `json:"erased,omitempty"`
	// ResubmitOf names the batch whose pending or incomplete CPFs this
	// submission sends again.
	ResubmitOf string    `json:"resubmit_of,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// AddSubmission stores sub and its chunks, all waiting, behind every chunk
// already queued, in one transaction. It assigns sub.Seq and sub.Chunks.
func (s *Store) AddSubmission(sub Submission, chunks [][]string, now time.Time) (*Submission, error) {
	err := s.db.Update(func(tx *bolt.Tx) error {
		subs := tx.Bucket(bucketSubmissions)
		if subs.Get([]byte(sub.ID)) != nil {
			return fmt.Errorf("submission %s: %w", sub.ID, ErrExists)
		}
		seq, err := subs.NextSequence()
		if err != nil {
			return err
		}
		sub.Seq, sub.Chunks, sub.CreatedAt = seq, len(chunks), now
		for i, cpfs := range chunks {
			c := &Chunk{SubmissionID: sub.ID, Seq: seq, Index: i, CPFCount: len(cpfs), CPFs: cpfs, UpdatedAt: now}
			if err := setChunkState(tx, c, ChunkWaiting); err != nil {
				return err
			}
			if err := putChunk(tx, c); err != nil {
				return err
			}
		}
		return putJSON(subs, sub.ID, sub)
	})
	if err != nil {
		return nil, fmt.Errorf("add submission: %w", err)
	}
	s.notifySubmit()
	return &sub, nil
}

// GetSubmission returns submission id and its chunks in order, without
// their CPFs, or ErrNotFound.
func (s *Store) GetSubmission(id string) (*Submission, []Chunk, error) {
	var (
		sub    Submission
		chunks []Chunk
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSubmissions).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("submission %s: %w", id, ErrNotFound)
		}
		if err := json.Unmarshal(v, &sub); err != nil {
			return fmt.Errorf("decode submission %s: %w", id, err)
		}
		prefix := chunkKey(sub.Seq, 0)[:8]
		c := tx.Bucket(bucketChunks).Cursor()
		for k, v := c.Seek(prefix); k != nil && string(k[:8]) == string(prefix); k, v = c.Next() {
			var ch Chunk
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("decode chunk of submission %s: %w", id, err)
			}
			ch.CPFs = nil
			chunks = append(chunks, ch)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return &sub, chunks, nil
}

// SubmitWakeups delivers a value after a submission was added, so that an
// idle submitter starts at once.
func (s *Store) SubmitWakeups() <-chan struct{} { return s.submitWake }

func (s *Store) notifySubmit() {
	select {
	case s.submitWake <- struct{}{}:
	default:
	}
}
