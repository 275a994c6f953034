package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A file removal is the crash-safe record that a batch's export files are
// to be deleted from disk. The transaction that makes the deletion due
// records it: PurgeExport (the export's retention is over) and Delivered
// (every sink has the export and file is not a sink). The caller deletes
// the files after that commit and then calls FileRemovalDone; a crash or a
// failed deletion in between leaves the record, and the next sweep
// (FileRemovals) deletes again, which is harmless since deleting what is
// already gone is not an error. While a batch has a record, Refetch is
// refused: a new export published first would be deleted with the old one.
//
// Bucket file_removals holds one entry per batch id; its one-byte value is
// the scope (removeScope, purgeScope). A purge deletes everything a
// removal does and more, so recording both leaves the purge, and a
// removal's FileRemovalDone does not clear a purge recorded meanwhile.
var bucketFileRemovals = []byte("file_removals")

// The scopes of a file removal, ordered: a larger one includes a smaller.
const (
	removeScope byte = 1
	purgeScope  byte = 2
)

// The buckets earlier versions kept file removals in, one per scope:
// export_removals for removals, purge_files for purges (both id → nil).
// Open moves their entries into file_removals and drops them
// (migrateFileRemovals).
var (
	bucketExportRemovals = []byte("export_removals")
	bucketPurgeFiles     = []byte("purge_files")
)

// FileRemoval is a batch whose export files are to be deleted and may still
// be on disk.
type FileRemoval struct {
	BatchID string
	// Purge is set for a purged batch: everything kept for it goes (the
	// published directory, its staging and any copy set aside:
	// export.Dir.Purge). Without it only the published directory goes
	// (export.Dir.Remove).
	Purge bool
}

func (r FileRemoval) scope() byte {
	if r.Purge {
		return purgeScope
	}
	return removeScope
}

// removalOf decodes an entry of file_removals. A value it does not know is
// taken as a purge, the scope that deletes the most.
func removalOf(id string, v []byte) FileRemoval {
	return FileRemoval{BatchID: id, Purge: len(v) != 1 || v[0] != removeScope}
}

// recordFileRemoval records that id's export files are to be deleted, a
// purge when purge is set; a scope already recorded that includes it stays.
func recordFileRemoval(tx *bolt.Tx, id string, purge bool) error {
	b := tx.Bucket(bucketFileRemovals)
	want := FileRemoval{BatchID: id, Purge: purge}
	if v := b.Get([]byte(id)); v != nil && removalOf(id, v).scope() >= want.scope() {
		return nil
	}
	return b.Put([]byte(id), []byte{want.scope()})
}

// pendingFileRemoval returns id's file removal, if one is recorded.
func pendingFileRemoval(tx *bolt.Tx, id string) (FileRemoval, bool) {
	v := tx.Bucket(bucketFileRemovals).Get([]byte(id))
	if v == nil {
		return FileRemoval{}, false
	}
	return removalOf(id, v), true
}

// FileRemovals returns every file removal recorded and not yet done, in
// batch id order: the exports whose deletion a crash or a failed deletion
// left unfinished, and any whose deletion is under way.
func (s *Store) FileRemovals() ([]FileRemoval, error) {
	var out []FileRemoval
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFileRemovals).ForEach(func(k, v []byte) error {
			out = append(out, removalOf(string(k), v))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list file removals: %w", err)
	}
	return out, nil
}

// FileRemovalDone records that the files r names are gone from disk. A
// record of a larger scope made since r was read (a purge recorded while a
// removal ran) stays, for the next sweep.
func (s *Store) FileRemovalDone(r FileRemoval) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return fileRemovalDone(tx, r) })
	if err != nil {
		return fmt.Errorf("record files of %s removed: %w", r.BatchID, err)
	}
	return nil
}

// FileRemovalsDone is FileRemovalDone for several removals in one
// transaction (a purge pass's batch of deleted exports).
func (s *Store) FileRemovalsDone(rs []FileRemoval) error {
	if len(rs) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, r := range rs {
			if err := fileRemovalDone(tx, r); err != nil {
				return fmt.Errorf("batch %s: %w", r.BatchID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the files of %d batches removed: %w", len(rs), err)
	}
	return nil
}

func fileRemovalDone(tx *bolt.Tx, r FileRemoval) error {
	cur, ok := pendingFileRemoval(tx, r.BatchID)
	if !ok || cur.scope() > r.scope() {
		return nil
	}
	return tx.Bucket(bucketFileRemovals).Delete([]byte(r.BatchID))
}

// migrateFileRemovals moves the entries of the buckets earlier versions
// kept file removals in (export_removals, purge_files) into file_removals
// and drops those buckets. It runs in the transaction that opens the
// database, so a crash leaves either both old buckets as they were or
// every entry moved; a batch that was in both becomes one purge.
func migrateFileRemovals(tx *bolt.Tx) (int, error) {
	var n int
	for _, old := range []struct {
		name  []byte
		purge bool
	}{{bucketExportRemovals, false}, {bucketPurgeFiles, true}} {
		b := tx.Bucket(old.name)
		if b == nil {
			continue
		}
		err := b.ForEach(func(k, _ []byte) error {
			n++
			return recordFileRemoval(tx, string(k), old.purge)
		})
		if err != nil {
			return n, fmt.Errorf("move the file removals of %s: %w", old.name, err)
		}
		if err := tx.DeleteBucket(old.name); err != nil {
			return n, fmt.Errorf("drop bucket %s: %w", old.name, err)
		}
	}
	return n, nil
}
