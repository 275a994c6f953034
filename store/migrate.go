package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// awaitingBackfilled marks, inside the awaiting bucket, that the bucket was
// completed once for databases written before it listed abandoned
// batches. A NUL byte can never start a batch id (CheckBatchID),
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

// prepare makes the database at db ready for this version, before the
// store serves: it creates every bucket, moves the records of the layout
// of earlier versions (migrateLayout, several transactions that resume
// where a crash stopped them) and then backfills, in one transaction. It
// returns how many records it moved.
func prepare(db *bolt.DB) (int, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketBatches, bucketRecords, bucketMeta, bucketDue, bucketQuarantine, bucketEvents, bucketPending, bucketCounts,
			bucketSubmissions, bucketChunks, bucketChunkQueue, bucketChunkCounts, bucketSent, bucketPolls, bucketAwaiting,
			bucketDeliveries, bucketDeliveryDue, bucketDeliveryQueued, bucketDeliveryState, bucketDeliveryCounts, bucketFileRemovals,
			bucketPaymentEvents, bucketPaymentBodies, bucketPaymentDedup, bucketPaymentCursors, bucketPaymentFailed,
			bucketRejected} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	migrated, err := migrateLayout(db)
	if err != nil {
		return migrated, err
	}
	return migrated, db.Update(backfill)
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
