package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/cpf"
)

// keptBodiesMasked marks in the meta bucket that the quarantined and
// rejected entries earlier versions kept unmasked were masked.
var keptBodiesMasked = []byte("kept-bodies-masked")

// maskQuarantined masks what an entry may hold of a CPF (its body and its
// reason): a no-op on one this version kept. It reports whether anything
// changed. The length is the body's as it came when the entry has none
// (an earlier version kept the body whole).
func maskQuarantined(q *Quarantined) bool {
	changed := false
	if q.BodyLen == 0 && len(q.Raw) > 0 && !q.Masked {
		q.BodyLen, changed = len(q.Raw), true
	}
	if m := cpf.ScrubBytes(q.Raw); len(m) > 0 && &m[0] != &q.Raw[0] {
		q.Raw, q.Masked, changed = m, true, true
	}
	if r := cpf.Scrub(q.Reason); r != q.Reason {
		q.Reason, changed = r, true
	}
	return changed
}

// maskRejected is maskQuarantined for a kept rejected delivery: its body
// and the signature header as sent.
func maskRejected(r *Rejected) bool {
	changed := false
	if m := cpf.ScrubBytes(r.Raw); len(m) > 0 && &m[0] != &r.Raw[0] {
		r.Raw, r.Masked, changed = m, true, true
	}
	if s := cpf.Scrub(r.Signature); s != r.Signature {
		r.Signature, r.Masked, changed = s, true, true
	}
	return changed
}

// maskKeptBodies masks, once per database, the quarantined and rejected
// entries an earlier version kept as they came: served back, they would
// hold a CPF for the rest of the retention period. walked is how many
// entries it read (0 once done).
func maskKeptBodies(tx *bolt.Tx) (walked int, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keptBodiesMasked) != nil {
		return 0, nil
	}
	for _, kind := range []struct {
		bucket []byte
		mask   func(v []byte) ([]byte, error)
	}{
		{bucketQuarantine, func(v []byte) ([]byte, error) {
			var q Quarantined
			if err := json.Unmarshal(v, &q); err != nil || !maskQuarantined(&q) {
				return nil, err
			}
			return json.Marshal(q)
		}},
		{bucketRejected, func(v []byte) ([]byte, error) {
			var r Rejected
			if err := json.Unmarshal(v, &r); err != nil || !maskRejected(&r) {
				return nil, err
			}
			return json.Marshal(r)
		}},
	} {
		b := tx.Bucket(kind.bucket)
		var keys, values [][]byte
		err := b.ForEach(func(k, v []byte) error {
			walked++
			nv, err := kind.mask(v)
			if err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			if nv != nil {
				keys, values = append(keys, bytes.Clone(k)), append(values, nv)
			}
			return nil
		})
		if err != nil {
			return walked, fmt.Errorf("mask the kept %s bodies: %w", kind.bucket, err)
		}
		for i, k := range keys { // not inside ForEach: bbolt forbids changing a bucket it walks
			if err := b.Put(k, values[i]); err != nil {
				return walked, fmt.Errorf("mask the kept %s bodies: %w", kind.bucket, err)
			}
		}
	}
	return walked, meta.Put(keptBodiesMasked, nil)
}
