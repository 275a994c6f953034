package store

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// purgeFigureBatches sizes TestPurgedTombstonesCompactSmaller. The suite
// runs it small; docs/performance.md's figure comes from
//
//	go test -run TestPurgedTombstonesCompactSmaller -v ./store/ -purge-figure-batches 100000
var purgeFigureBatches = flag.Int("purge-figure-batches", 2000, "batches exported, purged to tombstones and compacted")

// realisticNote is a batch.completed as the provider sends it
// (docs/provider-api.md §2.1), with the raw body of the size a real one has.
func realisticNote(id string, at time.Time) Notification {
	n := note(id, at)
	n.Raw = []byte(fmt.Sprintf(`{"event":"batch.completed","batch_id":%q,"status":"completed","total_requested":1000,"total_found":934,"total_not_found":66,"completed_at":%q}`,
		id, at.Format(time.RFC3339)))
	return n
}

// TestPurgedTombstonesCompactSmaller fills a database with exported
// batches the way the pipeline leaves them (recorded, fetched over several
// pages, exported), purges every export and record to its tombstone through
// the purger's own store calls, and compacts: the file must shrink, and
// every batch must still be there, purged and known.
func TestPurgedTombstonesCompactSmaller(t *testing.T) {
	n := *purgeFigureBatches
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seen := strings.Repeat("0123456789abcdef", 12) // 12 pages' cursors
	start := time.Now()
	for lo := 0; lo < n; lo += 1000 {
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i := lo; i < min(lo+1000, n); i++ {
				id := fmt.Sprintf("b-%07d", i)
				if _, err := recordTx(tx, realisticNote(id, t0)); err != nil {
					return err
				}
				b, err := getBatch(tx, id)
				if err != nil {
					return err
				}
				if err := setState(tx, b, StateFetching); err != nil {
					return err
				}
				b.Checkpoint = Checkpoint{Done: true, Items: 934, Pages: 12, StagedBytes: 934 * 180, Seen: seen, Cursor: "eyJvZmZzZXQiOjkwMH0"}
				if err := setState(tx, b, StateExported); err != nil {
					return err
				}
				b.ExportPath, b.FinishedAt, b.UpdatedAt = "/var/lib/batchhook/exports/"+id, t0, t0
				if err := putBatch(tx, b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	filled := time.Since(start)
	now := t0.Add(100 * 24 * time.Hour)
	start = time.Now()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("b-%07d", i)
		if _, err := s.PurgeExport(id, ExportPurge{ExportedAt: t0, ManifestSHA256: strings.Repeat("ab", 32), ManifestItems: 934}, now); err != nil {
			t.Fatal(err)
		}
		if err := s.FileRemovalDone(FileRemoval{BatchID: id, Purge: true}); err != nil {
			t.Fatal(err)
		}
	}
	reduced, after := 0, ""
	for {
		k, next, err := s.PurgeRecords(now.Add(-time.Hour), after, 500, now)
		if err != nil {
			t.Fatal(err)
		}
		reduced += k
		if next == "" {
			break
		}
		after = next
	}
	purged := time.Since(start)
	if reduced != n {
		t.Fatalf("PurgeRecords reduced %d records, want %d", reduced, n)
	}
	if c, err := s.Counts(); err != nil || c[StatePurged] != n || c[StateExported] != 0 {
		t.Fatalf("counts after purge %v %v, want %d purged", c, err, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	res := CompactFigures(t, dir)
	t.Logf("%d batches: filled in %v, purged (export and record, %d commits) in %v; %d -> %d bytes (%.1f%%)",
		n, filled.Round(time.Millisecond), 2*n+n/500+1, purged.Round(time.Millisecond), res.Before, res.After, 100*float64(res.After)/float64(res.Before))
	if res.After*2 > res.Before {
		t.Fatalf("compacting %d purged batches: %d -> %d bytes, want under half", n, res.Before, res.After)
	}
	s = openTest(t, dir)
	for _, id := range []string{"b-0000000", fmt.Sprintf("b-%07d", n-1)} {
		b, err := s.Get(id)
		if err != nil || b.State != StatePurged || b.Tombstone == nil || b.Tombstone.ManifestItems != 934 || b.Notification.Raw != nil {
			t.Fatalf("%s after compaction: %+v %v", id, b, err)
		}
		if known, err := s.Known(id); err != nil || !known {
			t.Fatalf("%s not known after compaction (%v): a replay would be accepted again", id, err)
		}
	}
}
