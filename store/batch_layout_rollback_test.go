package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// An earlier batchhook started on a migrated database (a rollback without
// restoring the backup) still records new batches its own way: the JSON
// under the id in "batches", listed by a "created" index it recreates.
// This version must move those records at its next start, or batches
// acknowledged in between would be known (a replay answered duplicate)
// but unreadable: never fetched, missing from the listing.
func TestRecordsAnEarlierVersionWroteAfterTheMigrationAreMoved(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if _, err := s.Record(note("b_before", t0)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// What the earlier version's Open and recordTx write.
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Hour)
	err = db.Update(func(tx *bolt.Tx) error {
		created, err := tx.CreateBucketIfNotExists(bucketCreated)
		if err != nil {
			return err
		}
		v := fmt.Sprintf(`{"id":"b_during","state":"queued","notification":{"event":"batch.completed","batch_id":"b_during","status":"completed","attempt":1,"received_at":%q,"source":"webhook","raw":"eyJhIjoxfQ=="},"checkpoint":{"done":false,"staged_bytes":0,"items":0,"pages":0},"fetch_attempts":0,"next_attempt_at":%q,"created_at":%q,"updated_at":%q}`,
			at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
		if err := created.Put(timeKey(at, "b_during"), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketBatches).Put([]byte("b_during"), []byte(v))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = openTest(t, dir)
	if n := s.MigratedRecords(); n != 1 {
		t.Errorf("MigratedRecords = %d, want 1 (the record the earlier version wrote)", n)
	}
	for _, id := range []string{"b_before", "b_during"} {
		b, err := s.Get(id)
		if err != nil {
			t.Fatalf("Get(%s) after the earlier version ran: %v", id, err)
		}
		if b.ID != id || b.State != StateQueued {
			t.Fatalf("Get(%s) = %+v", id, b)
		}
	}
	list, _, err := s.List("", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range list {
		got = append(got, b.ID)
	}
	if want := "[b_during b_before]"; fmt.Sprint(got) != want {
		t.Fatalf("List = %v, want %s", got, want)
	}
	s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketCreated) != nil {
			t.Error("the created index is back after the second migration")
		}
		return nil
	})
}
