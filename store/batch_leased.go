package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketLeased holds the id of every batch in fetching, kept by setState
// in the transaction that moves the batch, so that ReleaseLeases at start
// reads the few batches a stopped run held instead of every record ever
// stored. Its size is at most the fetch workers a run had.
var bucketLeased = []byte("leased")

// leasedIndexed marks in the meta bucket that the leased index was filled
// from the records (a database written before it existed, or by a version
// that did not keep it).
var leasedIndexed = []byte("leased-indexed")

// indexLease keeps the leased index right for a move from → to.
func indexLease(tx *bolt.Tx, id string, from, to State) error {
	switch {
	case to == StateFetching:
		return tx.Bucket(bucketLeased).Put([]byte(id), nil)
	case from == StateFetching:
		return tx.Bucket(bucketLeased).Delete([]byte(id))
	}
	return nil
}

// backfillLeased fills the leased index from the records once per
// database, and again whenever the index and the count of batches in
// fetching disagree: a version that did not keep the index (run on this
// database after this one, the backup not restored) may have leased
// batches the index misses, and such a batch would never be released. The
// check reads only the index's entries; the fill walks every record and
// decodes only those whose JSON says fetching. walked is how many records
// the fill read (0 when it did not run).
func backfillLeased(tx *bolt.Tx) (walked int, err error) {
	meta, leased := tx.Bucket(bucketMeta), tx.Bucket(bucketLeased)
	if meta.Get(leasedIndexed) != nil {
		ok, err := leasedMatchesCount(tx)
		if err != nil || ok {
			return 0, err
		}
	}
	if err := tx.DeleteBucket(bucketLeased); err != nil {
		return 0, fmt.Errorf("clear the leased index: %w", err)
	}
	if leased, err = tx.CreateBucket(bucketLeased); err != nil {
		return 0, fmt.Errorf("create the leased index: %w", err)
	}
	var found int64
	err = forEachRecord(tx, func(id string, v []byte) error {
		walked++
		if !bytes.Contains(v, fetchingMarker) {
			return nil
		}
		b, err := decodeBatch(id, v)
		if err != nil || b.State != StateFetching {
			return err
		}
		found++
		return leased.Put([]byte(id), nil)
	})
	if err != nil {
		return walked, fmt.Errorf("fill the leased index: %w", err)
	}
	// The walk is the truth: a count that strayed from it would send every
	// later start back here.
	counts := tx.Bucket(bucketCounts)
	if fetchingCount(counts) != found {
		if err := counts.Put([]byte(StateFetching), binary.BigEndian.AppendUint64(nil, uint64(found))); err != nil {
			return walked, err
		}
	}
	return walked, meta.Put(leasedIndexed, []byte{1})
}

// leasedMatchesCount reports whether the leased index names exactly the
// batches in fetching: each entry's record is fetching, and there are as
// many as the counts say.
func leasedMatchesCount(tx *bolt.Tx) (bool, error) {
	var n int64
	err := tx.Bucket(bucketLeased).ForEach(func(k, _ []byte) error {
		b, err := getBatch(tx, string(k))
		if err == nil && b.State == StateFetching {
			n++
		}
		if errors.Is(err, ErrNotFound) {
			return nil // a stale entry: ReleaseLeases drops it
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("check the leased index: %w", err)
	}
	return n == fetchingCount(tx.Bucket(bucketCounts)), nil
}

// fetchingCount is the count of batches in fetching (0 when none is kept).
func fetchingCount(counts *bolt.Bucket) int64 {
	if v := counts.Get([]byte(StateFetching)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}
