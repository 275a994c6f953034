package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// writeOldLayout writes a database as batchhook wrote it before the
// records bucket:
// each record as JSON under its id in "batches" (with its id and the raw
// body in Base64), listed by the "created" index. stray has a record but
// no index entry.
func writeOldLayout(t *testing.T, dir string, ids []string, stray string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		batches, _ := tx.CreateBucket(bucketBatches)
		created, _ := tx.CreateBucket(bucketCreated)
		put := func(id string, at time.Time, indexed bool) error {
			v := fmt.Sprintf(`{"id":%q,"state":"queued","notification":{"event":"batch.completed","batch_id":%q,"status":"completed","attempt":1,"received_at":%q,"source":"webhook","raw":"eyJhIjoxfQ=="},"checkpoint":{"done":false,"staged_bytes":0,"items":0,"pages":0},"fetch_attempts":0,"next_attempt_at":%q,"created_at":%q,"updated_at":%q}`,
				id, id, at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			if !json.Valid([]byte(v)) {
				return fmt.Errorf("bad fixture %s", v)
			}
			if indexed {
				if err := created.Put(timeKey(at, id), nil); err != nil {
					return err
				}
			}
			return batches.Put([]byte(id), []byte(v))
		}
		for i, id := range ids {
			if err := put(id, t0.Add(time.Duration(i)*time.Second), true); err != nil {
				return err
			}
		}
		return put(stray, t0.Add(-time.Hour), false)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A database written before the records bucket opens with every record
// moved, readable by id, known to the webhook's duplicate check, listed
// newest first in the old order, and the old index gone.
func TestOpenMovesOldRecordsToTheRecordsBucket(t *testing.T) {
	dir := t.TempDir()
	// Ids out of their creation order, as the provider's random ids are.
	ids := []string{"b_f3", "b_01", "b_aa", "b_07", "b_c2"}
	writeOldLayout(t, dir, ids, "b_stray")
	s := openTest(t, dir)
	if n := s.MigratedRecords(); n != len(ids)+1 {
		t.Fatalf("MigratedRecords = %d, want %d", n, len(ids)+1)
	}
	for _, id := range append(ids, "b_stray") {
		b, err := s.Get(id)
		if err != nil {
			t.Fatalf("Get(%s) after the migration: %v", id, err)
		}
		if b.ID != id || b.State != StateQueued || string(b.Notification.Raw) != `{"a":1}` {
			t.Fatalf("Get(%s) = id %q state %s raw %q", id, b.ID, b.State, b.Notification.Raw)
		}
		if known, err := s.Known(id); err != nil || !known {
			t.Fatalf("Known(%s) = %v, %v", id, known, err)
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
	want := []string{"b_stray", "b_c2", "b_07", "b_aa", "b_01", "b_f3"} // newest first; the stray is moved last
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List after the migration = %v, want %v", got, want)
	}
	s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketCreated) != nil {
			t.Error("the old created index is still there")
		}
		return nil
	})
	// A new record after the migration lists first.
	if _, err := s.Record(note("b_new", t0.Add(-48*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := s.List("", 1, ""); len(list) != 1 || list[0].ID != "b_new" {
		t.Fatalf("newest after the migration = %+v", list)
	}
}

// A migration cut short (here: its first chunk committed, as a crash would
// leave it) finishes at the next open, moving each record once.
func TestAnInterruptedMigrationResumes(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"b_5", "b_4", "b_3", "b_2", "b_1"}
	writeOldLayout(t, dir, ids, "b_stray")
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		tx.CreateBucketIfNotExists(bucketRecords)
		tx.CreateBucketIfNotExists(bucketMeta)
		return nil
	})
	// The first two records of the created index, and where to go on.
	err = db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCreated).Cursor()
		k, _ := c.First()
		for range 2 {
			if _, err := moveRecord(tx, k[8:]); err != nil {
				return err
			}
			k, _ = c.Next()
		}
		return tx.Bucket(bucketMeta).Put(layoutResume, k)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t, dir)
	s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketRecords).Stats().KeyN; n != len(ids)+1 {
			t.Errorf("records bucket holds %d records, want %d (each moved once)", n, len(ids)+1)
		}
		return nil
	})
	list, _, err := s.List("", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range list {
		got = append(got, b.ID)
	}
	if want := []string{"b_stray", "b_1", "b_2", "b_3", "b_4", "b_5"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List after the resumed migration = %v, want %v", got, want)
	}
}
