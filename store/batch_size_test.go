package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// wireNote is a notification the size a real one has: the body wrk sends
// in bench/compare.sh (bench/presign.sh), received now.
func wireNote(id string) Notification {
	n := note(id, time.Now())
	n.Status = "failed"
	one, zero := int64(1), int64(0)
	n.TotalRequested, n.TotalFound, n.TotalNotFound = &one, &zero, &zero
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n.CompletedAt = &at
	n.Raw = fmt.Appendf(nil, `{"event":"batch.completed","batch_id":"%s","status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":"2026-01-01T00:00:00Z"}`, id)
	return n
}

// BenchmarkRecordSize records b.N batches from 64 concurrent callers (group
// commits of about 64 records) and reports what a batch costs the
// database: bytes of batchhook.db a batch, and pages written for every 64
// records (about one group commit). Run with a large -benchtime to see the steady state:
//
//	go test -run XXX -bench BenchmarkRecordSize -benchtime 100000x ./store/
func BenchmarkRecordSize(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	before := s.db.Stats()
	ids := make(chan string, 1024)
	go func() {
		for i := range b.N {
			// Random like the simulator's (b_<20 hex>), not in order: the
			// provider's ids are opaque.
			ids <- fmt.Sprintf("b_%020x", rand.Uint64()<<16|uint64(i&0xffff))
		}
		close(ids)
	}()
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if _, err := s.Record(wireNote(id)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	st := s.db.Stats()
	pageWrites := st.TxStats.GetWrite() - before.TxStats.GetWrite()
	fi, err := os.Stat(s.Path())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(b.N), "dbB/batch")
	b.ReportMetric(float64(pageWrites)/float64(b.N)*64, "pagewrites/64rec")
	if os.Getenv("BATCHHOOK_BUCKET_STATS") != "" {
		s.db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
				bs := bk.Stats()
				if bs.KeyN > 0 {
					fmt.Printf("%-20s keys=%7d leafPages=%6d leafInuse=%9d leafAlloc=%9d branchPages=%5d inline=%d\n", name, bs.KeyN, bs.LeafPageN, bs.LeafInuse, bs.LeafAlloc, bs.BranchPageN, bs.InlineBucketN)
				}
				return nil
			})
		})
	}
}
