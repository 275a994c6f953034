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
// records whose JSON says they are abandoned; walked is how many records
// it read (0 once done).
func backfillAwaiting(tx *bolt.Tx) (walked int, err error) {
	aw := tx.Bucket(bucketAwaiting)
	if aw.Get(awaitingBackfilled) != nil {
		return 0, nil
	}
	err = forEachRecord(tx, func(id string, v []byte) error {
		walked++
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
		return aw.Put([]byte(id), nil)
	})
	if err != nil {
		return walked, fmt.Errorf("backfill the awaiting index: %w", err)
	}
	return walked, aw.Put(awaitingBackfilled, nil)
}

// Backfill is one walk over every batch record that Open made to fill an
// index a database written by an earlier version lacks. Each runs once per
// database (a marker in the meta bucket says it is done), never at every
// start.
type Backfill struct {
	// Index names the index filled.
	Index string
	// Records is how many records the walk read.
	Records int
}

// prepare makes the database at db ready for this version, before the
// store serves: it creates every bucket, moves the records of the layout
// of earlier versions (migrateLayout, several transactions that resume
// where a crash stopped them) and then backfills, in one transaction. It
// returns how many records it moved and the walks the backfill made.
func prepare(db *bolt.DB) (int, []Backfill, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketBatches, bucketRecords, bucketMeta, bucketDue, bucketQuarantine, bucketEvents, bucketPending, bucketCounts,
			bucketSubmissions, bucketChunks, bucketChunkQueue, bucketChunkCounts, bucketSent, bucketPolls, bucketAwaiting,
			bucketDeliveries, bucketDeliveryDue, bucketDeliveryQueued, bucketDeliveryState, bucketDeliveryCounts, bucketFileRemovals,
			bucketPaymentEvents, bucketPaymentBodies, bucketPaymentDedup, bucketPaymentCursors, bucketPaymentFailed,
			bucketRejected, bucketLeased} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return startStateIndex(tx)
	})
	if err != nil {
		return 0, nil, err
	}
	migrated, err := migrateLayout(db)
	if err != nil {
		return migrated, nil, err
	}
	var walks []Backfill
	err = db.Update(func(tx *bolt.Tx) error {
		walks = nil // a failed transaction leaves nothing done
		var err error
		walks, err = backfill(tx)
		return err
	})
	return migrated, walks, err
}

// backfill brings a database written by an earlier version up to date,
// in the transaction that opens it: the index entries earlier versions did
// not keep are added once, and the file removals they kept in two buckets
// move to one (migrateFileRemovals). It returns the walks over every
// record it made (none on a database already up to date, or empty).
func backfill(tx *bolt.Tx) ([]Backfill, error) {
	var walks []Backfill
	for _, f := range []struct {
		index string
		fill  func(*bolt.Tx) (int, error)
	}{{"purge", backfillPurgeIndex}, {"awaiting", backfillAwaiting}, {"leased", backfillLeased}, {"masked kept bodies", maskKeptBodies}} {
		n, err := f.fill(tx)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			walks = append(walks, Backfill{Index: f.index, Records: n})
		}
	}
	_, err := migrateFileRemovals(tx)
	return walks, err
}
