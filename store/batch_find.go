package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// FindBatch returns the batch whose id is id or, when none is, the one
// batch whose id starts with id, so an operator can type the first
// characters the list shows (as for quarantine entries). Ids are compared
// as given: a provider's ids may be case-sensitive. None is ErrNotFound;
// several is an error wrapping ErrAmbiguous that says how many start so.
func (s *Store) FindBatch(id string) (*Batch, error) {
	if id == "" {
		return nil, ErrNotFound
	}
	prefix := []byte(id)
	var b *Batch
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketBatches).Cursor()
		var only string
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if bytes.Equal(k, prefix) {
				n, only = 1, id
				break
			}
			if n++; n == 1 {
				only = string(k)
			}
		}
		if n != 1 {
			return nil
		}
		var err error
		b, err = getBatch(tx, only)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, ErrNotFound
	case n > 1:
		return nil, fmt.Errorf("%w: %d batches start with %q; give more of the id", ErrAmbiguous, n, id)
	}
	return b, nil
}

// Get returns the record of batch id, or ErrNotFound.
func (s *Store) Get(id string) (*Batch, error) {
	var b *Batch
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		b, err = getBatch(tx, id)
		return err
	})
	return b, err
}
