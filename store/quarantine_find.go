package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// FindQuarantined returns the quarantine entry whose id (64 hex digits)
// is id or starts with id, so an operator can type the first few digits
// the list shows. None is ErrNotFound; several is an error wrapping
// ErrAmbiguous that says how many entries start so.
func (s *Store) FindQuarantined(id string) (*Quarantined, error) {
	prefix := []byte(strings.ToLower(id))
	if len(prefix) == 0 {
		return nil, ErrNotFound
	}
	var q Quarantined
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketQuarantine).Cursor()
		var first []byte
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if n++; n == 1 {
				first = bytes.Clone(v)
			}
		}
		switch {
		case n == 0:
			return ErrNotFound
		case n > 1:
			return nil
		}
		if err := json.Unmarshal(first, &q); err != nil {
			return fmt.Errorf("decode quarantine entry: %w", err)
		}
		maskQuarantined(&q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n > 1 {
		return nil, fmt.Errorf("%w: %d entries start with %q; give more of the id", ErrAmbiguous, n, string(prefix))
	}
	return &q, nil
}
