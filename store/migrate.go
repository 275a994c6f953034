package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// awaitingBackfilled marks, inside the awaiting bucket, that the bucket was
// completed once for databases written before it listed abandoned batches
// (issue 10 item 6). A NUL byte can never start a batch id (CheckBatchID),
// so Known never mistakes it for one.
var awaitingBackfilled = []byte("\x00backfilled-abandoned")

// backfillAwaiting adds to the awaiting index every batch abandoned before
// any batch.completed was recorded, once per database: such a batch was
// taken off the index by earlier versions, and a late genuine webhook for
// it would be answered duplicate instead of queued. It decodes only the
// records whose JSON says they are abandoned.
func backfillAwaiting(tx *bolt.Tx) (int, error) {
	aw := tx.Bucket(bucketAwaiting)
	if aw.Get(awaitingBackfilled) != nil {
		return 0, nil
	}
	n := 0
	err := forEachRecord(tx, func(id string, v []byte) error {
		if !bytes.Contains(v, []byte(`"state":"abandoned"`)) {
			return nil
		}
		b, err := decodeBatch(id, v)
		if err != nil {
			return err
		}
		if !b.awaitingNotification() || aw.Get([]byte(id)) != nil {
			return nil
		}
		n++
		return aw.Put([]byte(id), nil)
	})
	if err != nil {
		return 0, fmt.Errorf("backfill the awaiting index: %w", err)
	}
	return n, aw.Put(awaitingBackfilled, nil)
}

// backfill brings a database written by an earlier version up to date,
// in the transaction that opens it: the index entries earlier versions did
// not keep are added once, and the file removals they kept in two buckets
// move to one (migrateFileRemovals).
func backfill(tx *bolt.Tx) error {
	if err := backfillPurgeIndex(tx); err != nil {
		return err
	}
	if _, err := backfillAwaiting(tx); err != nil {
		return err
	}
	_, err := migrateFileRemovals(tx)
	return err
}
