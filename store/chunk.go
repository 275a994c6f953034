package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ChunkState is where a chunk is on its way to the provider.
type ChunkState string

// The chunk states:
//
//	waiting ──submitter: before the POST──▶ sending
//	sending ──provider accepted (batch id recorded with it)──▶ submitted
//	sending ──request never sent, 429, 503, key refused──▶ waiting (retried, in order)
//	sending ──provider refused it (other 4xx)──▶ failed
//	sending ──sent, but no usable answer (or a crash came)──▶ submit_unknown
//	failed | submit_unknown ──operator: resend──▶ waiting
const (
	ChunkWaiting   ChunkState = "waiting"
	ChunkSending   ChunkState = "sending"
	ChunkSubmitted ChunkState = "submitted"
	// ChunkUnknown: the provider may or may not have accepted the chunk.
	// It is never sent again automatically: the provider bills per CPF
	// found, so an operator decides.
	ChunkUnknown ChunkState = "submit_unknown"
	ChunkFailed  ChunkState = "failed"
)

// ChunkStates lists every chunk state (for metrics).
var ChunkStates = []ChunkState{ChunkWaiting, ChunkSending, ChunkSubmitted, ChunkUnknown, ChunkFailed}

// Chunk is up to 1,000 CPFs sent as one batch.
type Chunk struct {
	SubmissionID string     `json:"submission_id"`
	Seq          uint64     `json:"seq"`
	Index        int        `json:"index"`
	State        ChunkState `json:"state"`
	CPFCount     int        `json:"cpf_count"`
	// CPFs are kept until the provider accepted the chunk, then dropped:
	// the store holds no more personal data than it needs.
	CPFs []string `json:"cpfs,omitempty"`
	// CPFsPurged says the purger deleted the CPFs of this failed or
	// submit_unknown chunk after RECORD_RETENTION: it keeps its counts but
	// can no longer be resent.
	CPFsPurged bool      `json:"cpfs_purged,omitempty"`
	BatchID    string    `json:"batch_id,omitempty"`
	Attempts   int       `json:"attempts,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	SentAt     time.Time `json:"sent_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func chunkKey(seq uint64, index int) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, seq)
	binary.BigEndian.PutUint32(k[8:], uint32(index))
	return k
}

// NextChunk returns the chunk at the head of the queue (with its CPFs), or
// nil when none waits.
func (s *Store) NextChunk() (*Chunk, error) {
	var c *Chunk
	err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketChunkQueue).Cursor().First()
		if k == nil {
			return nil
		}
		var err error
		c, err = getChunk(tx, k)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("next chunk: %w", err)
	}
	return c, nil
}

// ChunkSending marks a waiting chunk as being sent. It is committed before
// the request leaves, so that a crash during the request is seen at the
// next start (ResolveSending) instead of the chunk being sent again.
func (s *Store) ChunkSending(seq uint64, index int, now time.Time) error {
	return s.updateChunk(seq, index, ChunkWaiting, func(tx *bolt.Tx, c *Chunk) error {
		c.Attempts++
		c.UpdatedAt = now
		return setChunkState(tx, c, ChunkSending)
	})
}

// ChunkRequeue puts a chunk that was not accepted back at the head of the
// queue (the request never left, or the provider answered 429 or 503).
// reached says whether the request got to the provider: if so it counts
// in the rolling rate window, at now.
func (s *Store) ChunkRequeue(seq uint64, index int, reason string, reached bool, now time.Time) error {
	return s.updateChunk(seq, index, ChunkSending, func(tx *bolt.Tx, c *Chunk) error {
		c.LastError, c.UpdatedAt = reason, now
		if reached {
			if err := addSent(tx, now, fmt.Sprintf("%s/%d", c.SubmissionID, c.Index)); err != nil {
				return err
			}
		}
		return setChunkState(tx, c, ChunkWaiting)
	})
}

// ChunkResend puts a failed or submit_unknown chunk back in the queue, at
// its place in intake order: an operator's decision, after checking with
// the provider that it was not accepted (the provider bills per CPF found).
func (s *Store) ChunkResend(submissionID string, index int, now time.Time) (*Chunk, error) {
	var out *Chunk
	err := s.db.Update(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSubmissions).Get([]byte(submissionID))
		if v == nil {
			return fmt.Errorf("submission %s: %w", submissionID, ErrNotFound)
		}
		var sub Submission
		if err := json.Unmarshal(v, &sub); err != nil {
			return fmt.Errorf("decode submission %s: %w", submissionID, err)
		}
		c, err := getChunk(tx, chunkKey(sub.Seq, index))
		if err != nil {
			return fmt.Errorf("chunk %d of submission %s: %w", index, submissionID, err)
		}
		if c.State != ChunkFailed && c.State != ChunkUnknown {
			return fmt.Errorf("chunk %d of submission %s is %s; only failed or submit_unknown chunks are resent: %w",
				index, submissionID, c.State, ErrState)
		}
		if c.CPFsPurged {
			return fmt.Errorf("chunk %d of submission %s: its CPFs were deleted after BATCHHOOK_RECORD_RETENTION; submit them again as a new submission: %w",
				index, submissionID, ErrState)
		}
		if c.CPFCount == 0 {
			return fmt.Errorf("chunk %d of submission %s holds no CPF (all erased); nothing to resend: %w", index, submissionID, ErrState)
		}
		c.UpdatedAt = now
		if err := setChunkState(tx, c, ChunkWaiting); err != nil {
			return err
		}
		out = c
		return putChunk(tx, c)
	})
	if err != nil {
		return nil, fmt.Errorf("resend chunk: %w", err)
	}
	s.notifySubmit()
	out.CPFs = nil
	return out, nil
}

// ChunkGiveUp ends a chunk that was being sent as failed (the provider
// refused it) or submit_unknown (it may have been accepted), with reason.
func (s *Store) ChunkGiveUp(seq uint64, index int, state ChunkState, reason string, now time.Time) error {
	if state != ChunkFailed && state != ChunkUnknown {
		return fmt.Errorf("give up chunk as %s: %w", state, ErrState)
	}
	return s.updateChunk(seq, index, ChunkSending, func(tx *bolt.Tx, c *Chunk) error {
		c.LastError, c.UpdatedAt = reason, now
		if err := addSent(tx, now, fmt.Sprintf("%s/%d", c.SubmissionID, c.Index)); err != nil {
			return err
		}
		return setChunkState(tx, c, state)
	})
}

// ChunkSubmitted records, in one transaction, that the provider accepted a
// chunk as batchID: the chunk leaves the queue (its CPFs are dropped), and
// the batch is recorded as submitted, to be polled at pollAt unless its
// batch.completed comes first. If a webhook for batchID was already
// recorded (the provider was quicker than this commit), the batch keeps its
// state and gains the submission's details.
func (s *Store) ChunkSubmitted(seq uint64, index int, batchID string, pollAt, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.updateChunk(seq, index, ChunkSending, func(tx *bolt.Tx, c *Chunk) error {
		c.BatchID, c.SentAt, c.UpdatedAt, c.CPFs, c.LastError = batchID, now, now, nil, ""
		if err := setChunkState(tx, c, ChunkSubmitted); err != nil {
			return err
		}
		if err := addSent(tx, now, batchID); err != nil {
			return err
		}
		b, err := getBatch(tx, batchID)
		switch {
		case errors.Is(err, ErrNotFound):
			b = &Batch{ID: batchID, CreatedAt: now, UpdatedAt: now}
			if err := setState(tx, b, StateSubmitted); err != nil {
				return err
			}
			if err := schedulePoll(tx, b, pollAt); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if b.SubmissionID == "" {
			b.SubmissionID, b.Chunk, b.CPFCount, b.SubmittedAt = c.SubmissionID, c.Index, c.CPFCount, now
		}
		out = b
		return putBatch(tx, b)
	})
	if err != nil {
		return nil, err
	}
	s.notifyPoll()
	return out, nil
}

// ResolveSending marks every chunk left in sending by a previous run as
// submit_unknown: the request may have reached the provider. The daemon
// calls it at start, before the submitter runs, and logs what it returns.
func (s *Store) ResolveSending(now time.Time) ([]Chunk, error) {
	var out []Chunk
	err := s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChunkQueue).Cursor()
		var stuck []*Chunk
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			ch, err := getChunk(tx, k)
			if err != nil {
				return err
			}
			if ch.State == ChunkSending {
				stuck = append(stuck, ch)
			}
		}
		for _, ch := range stuck {
			ch.LastError = "batchhook stopped while the chunk was being sent: the provider may have accepted it"
			ch.UpdatedAt = now
			// It may have arrived at any time up to now: count it in the
			// rate window as arriving now, the latest it can have.
			if err := addSent(tx, now, fmt.Sprintf("%s/%d", ch.SubmissionID, ch.Index)); err != nil {
				return err
			}
			if err := setChunkState(tx, ch, ChunkUnknown); err != nil {
				return err
			}
			if err := putChunk(tx, ch); err != nil {
				return err
			}
			ch.CPFs = nil
			out = append(out, *ch)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolve chunks left sending: %w", err)
	}
	return out, nil
}

// ChunksIn returns up to limit chunks in state, oldest first, without their
// CPFs (the admin API lists the submit_unknown ones with it).
func (s *Store) ChunksIn(state ChunkState, limit int) ([]Chunk, error) {
	var out []Chunk
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChunks).ForEach(func(_, v []byte) error {
			if len(out) == limit {
				return nil
			}
			var ch Chunk
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("decode chunk: %w", err)
			}
			if ch.State == state {
				ch.CPFs = nil
				out = append(out, ch)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list %s chunks: %w", state, err)
	}
	return out, nil
}

// ChunkCounts returns how many chunks are in each state.
func (s *Store) ChunkCounts() (map[ChunkState]int, error) {
	counts := map[ChunkState]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChunkCounts).ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				counts[ChunkState(k)] = int(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read chunk counts: %w", err)
	}
	return counts, nil
}

func (s *Store) updateChunk(seq uint64, index int, want ChunkState, fn func(tx *bolt.Tx, c *Chunk) error) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		c, err := getChunk(tx, chunkKey(seq, index))
		if err != nil {
			return err
		}
		if c.State != want {
			return fmt.Errorf("chunk is %s, want %s: %w", c.State, want, ErrState)
		}
		if err := fn(tx, c); err != nil {
			return err
		}
		return putChunk(tx, c)
	})
	if err != nil {
		return fmt.Errorf("chunk %d/%d: %w", seq, index, err)
	}
	return nil
}

// setChunkState moves c to state to, keeping the counts and the queue
// right. Every chunk state change goes through it.
func setChunkState(tx *bolt.Tx, c *Chunk, to ChunkState) error {
	counts := tx.Bucket(bucketChunkCounts)
	if c.State != "" {
		if err := addCountIn(counts, string(c.State), -1); err != nil {
			return err
		}
	}
	if err := addCountIn(counts, string(to), 1); err != nil {
		return err
	}
	key := chunkKey(c.Seq, c.Index)
	q := tx.Bucket(bucketChunkQueue)
	var err error
	if to == ChunkWaiting || to == ChunkSending {
		err = q.Put(key, nil)
	} else {
		err = q.Delete(key)
	}
	c.State = to
	return err
}

func getChunk(tx *bolt.Tx, key []byte) (*Chunk, error) {
	v := tx.Bucket(bucketChunks).Get(key)
	if v == nil {
		return nil, ErrNotFound
	}
	var c Chunk
	if err := json.Unmarshal(v, &c); err != nil {
		return nil, fmt.Errorf("decode chunk: %w", err)
	}
	return &c, nil
}

func putChunk(tx *bolt.Tx, c *Chunk) error {
	return putJSON(tx.Bucket(bucketChunks), string(chunkKey(c.Seq, c.Index)), c)
}
