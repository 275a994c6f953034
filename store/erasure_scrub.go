package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/cpf"
)

// EraseChunks removes every CPF for which match is true from the chunks
// that still hold CPFs (waiting, failed, submit_unknown), in one
// transaction that also notes each chunk in erasure id. A waiting chunk
// keeps its place and sends the rest; one left empty is ended as failed
// with a note (and cannot be resent: ChunkResend refuses an empty chunk).
// A chunk being sent is left alone and noted InFlight: the submitter holds
// its CPFs and the provider has them. The submission's Valid count goes
// down and its Erased count up.
func (s *Store) EraseChunks(id string, match func(digits string) bool, now time.Time) ([]ErasedChunk, error) {
	var out []ErasedChunk
	err := s.db.Update(func(tx *bolt.Tx) error {
		var touched []*Chunk
		var removed []int
		err := tx.Bucket(bucketChunks).ForEach(func(_, v []byte) error {
			var c Chunk
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("decode chunk: %w", err)
			}
			keep := slices.DeleteFunc(slices.Clone(c.CPFs), func(raw string) bool { return matchCPF(raw, match) })
			if n := len(c.CPFs) - len(keep); n > 0 {
				if c.State == ChunkSending {
					out = append(out, ErasedChunk{SubmissionID: c.SubmissionID, Index: c.Index, State: c.State, InFlight: true})
					return nil
				}
				c.CPFs = keep
				touched, removed = append(touched, &c), append(removed, n)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, c := range touched {
			n := removed[i]
			c.CPFCount -= n
			c.UpdatedAt = now
			ec := ErasedChunk{SubmissionID: c.SubmissionID, Index: c.Index, State: c.State, CPFs: n}
			if len(c.CPFs) == 0 {
				ec.Ended = true
				c.CPFs = nil
				c.LastError = fmt.Sprintf("every CPF of this chunk was erased (erasure %s): nothing left to send", id)
				if c.State == ChunkWaiting {
					if err := setChunkState(tx, c, ChunkFailed); err != nil {
						return err
					}
				}
			}
			if err := putChunk(tx, c); err != nil {
				return err
			}
			if err := countErasedInSubmission(tx, c.SubmissionID, n); err != nil {
				return err
			}
			out = append(out, ec)
		}
		return updateErasure(tx, id, func(e *Erasure) error {
			e.Chunks = mergeChunks(e.Chunks, out)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("erase from chunks: %w", err)
	}
	return out, nil
}

// matchCPF normalizes a stored CPF before matching it (intake stores the
// 11 digits; an older or odd value is compared as it is).
func matchCPF(raw string, match func(string) bool) bool {
	if d, err := cpf.Normalize(raw); err == nil {
		return match(d)
	}
	return match(raw)
}

func countErasedInSubmission(tx *bolt.Tx, subID string, n int) error {
	b := tx.Bucket(bucketSubmissions)
	v := b.Get([]byte(subID))
	if v == nil {
		return nil
	}
	var sub Submission
	if err := json.Unmarshal(v, &sub); err != nil {
		return fmt.Errorf("decode submission %s: %w", subID, err)
	}
	sub.Valid -= n
	sub.Erased += n
	return putJSON(b, subID, &sub)
}

func mergeChunks(old, add []ErasedChunk) []ErasedChunk {
	out := slices.Clone(old)
	for _, a := range add {
		i := slices.IndexFunc(out, func(o ErasedChunk) bool { return o.SubmissionID == a.SubmissionID && o.Index == a.Index })
		if i < 0 {
			out = append(out, a)
			continue
		}
		out[i].CPFs += a.CPFs
		out[i].Ended = out[i].Ended || a.Ended
		out[i].InFlight = out[i].InFlight && a.InFlight
		out[i].State = a.State
	}
	return out
}

// EraseBodies replaces by a tombstone every quarantined, audit or kept
// rejected (401) body in
// which a CPF-shaped run (11 digits, or 000.000.000-00) matches: the raw
// bytes go, the entry and its id (the SHA-256 of the body) stay, with
// ErasedBy naming the erasure. One transaction, noted in erasure id. The
// batch records' own raw notifications are not scanned: a batch.completed
// carries ids and counters, never a CPF (docs/provider-api.md §2.1).
func (s *Store) EraseBodies(id string, match func(digits string) bool) ([]ErasedBody, error) {
	var out []ErasedBody
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, kind := range []struct {
			name   string
			bucket []byte
		}{{"quarantine", bucketQuarantine}, {"audit", bucketEvents}, {"rejected", bucketRejected}} {
			b := tx.Bucket(kind.bucket)
			var hits [][]byte
			err := b.ForEach(func(k, v []byte) error {
				var body struct {
					Raw []byte `json:"raw"`
				}
				if err := json.Unmarshal(v, &body); err != nil {
					return fmt.Errorf("decode %s entry %s: %w", kind.name, k, err)
				}
				if slices.ContainsFunc(cpf.Candidates(body.Raw), match) {
					hits = append(hits, slices.Clone(k))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range hits {
				if err := tombstoneBody(b, k, id); err != nil {
					return fmt.Errorf("%s entry %s: %w", kind.name, k, err)
				}
				out = append(out, ErasedBody{Kind: kind.name, ID: string(k)})
			}
		}
		return updateErasure(tx, id, func(e *Erasure) error {
			for _, o := range out {
				if !slices.Contains(e.Bodies, o) {
					e.Bodies = append(e.Bodies, o)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("erase from quarantined and audit bodies: %w", err)
	}
	return out, nil
}

// tombstoneBody drops the raw member of the entry at k and sets erased_by,
// keeping every other member as it was.
func tombstoneBody(b *bolt.Bucket, k []byte, erasure string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Get(k), &m); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	delete(m, "raw")
	m["erased_by"], _ = json.Marshal(erasure)
	v, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return b.Put(k, v)
}
