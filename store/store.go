// Package store is the durable bottom of batchhook: it owns the bbolt file
// and the nouns kept in it (notifications, batch records and their states,
// checkpoints, quarantine and audit entries). No other package imports bbolt
// and no exported signature mentions it.
//
// Every exported method is one transaction. Writes are committed with
// fsync before the method returns, so a caller that replies 2xx after a nil
// error has made the batch durable. The webhooks' methods that take a
// context may return ErrSlowCommit first, promising nothing (their write
// goes on; engine_group.go).
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the name of the database file inside the data directory.
const FileName = "batchhook.db"

// initialMmap is the address space bbolt maps at open (virtual: the file
// and the memory in use grow with the data). A commit that needs a larger
// map waits until every read transaction has ended, so without it a
// backup streaming to a slow client could hold up writes (Backup).
const initialMmap = 1 << 30

// boltOptions are the database's settings. The free-page list is still
// written at every commit: with NoFreelistSync bbolt rebuilds it at open
// and in Tx.Check by walking every page, and that walk panics on a damaged
// page, so `batchhook backup --check` and restore would crash on a bad file
// instead of refusing it (store/backup_test.go's damaged files). The file
// grows allocSize at a time instead of bbolt's 16 MiB, so its size stays
// close to what it holds (issue 15: database bytes per batch).
func boltOptions(lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) *bolt.Options {
	return &bolt.Options{Timeout: lockTimeout, OpenFile: openFile, InitialMmapSize: initialMmap}
}

const allocSize = 4 << 20

// Store is the bbolt-backed store. It is safe for concurrent use.
type Store struct {
	db   *durableDB // bbolt, failing closed after a failed commit (engine_durable.go)
	wake chan struct{}
	// submitWake and pollWake wake the submitter and the reconciler.
	submitWake chan struct{}
	pollWake   chan struct{}

	// The group-commit writer (engine_group.go).
	records    chan writeReq
	quit       chan struct{}
	writerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error

	// The configured non-file sinks and their wakeups (delivery.go).
	sinkMu   sync.Mutex
	sinks    []string
	sinkWake map[string]chan struct{}

	// The payment sinks' wakeups (payment.go).
	payWake paymentWake

	// migrated counts the records Open moved to the records bucket
	// (batch_layout.go).
	migrated int
}

// MigratedRecords returns how many batch records Open moved from the
// layout of earlier versions (0 once a database is migrated).
func (s *Store) MigratedRecords() int { return s.migrated }

// Open opens (creating if needed) the database in dir, with mode 0600 and
// its directory 0700. It waits at most lockTimeout for another process's
// lock and then fails with ErrLocked, so a second daemon on the same data
// directory stops at once with a clear message instead of hanging. A
// database file that is a symbolic link is refused with ErrSymlink.
func Open(dir string, lockTimeout time.Duration) (*Store, error) {
	return open(dir, lockTimeout, openNoFollow)
}

// open is Open with the function that opens the file (tests wrap it to
// reach the file handle and make a commit fail).
func open(dir string, lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, boltOptions(lockTimeout, openFile))
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w (is another batchhook running on this data dir?)", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.AllocSize = allocSize
	err = db.Update(func(tx *bolt.Tx) error {
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
	var migrated int
	if err == nil {
		migrated, err = migrateLayout(db)
	}
	if err == nil {
		err = db.Update(backfill)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise %s: %w", path, err)
	}
	ddb, err := newDurableDB(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := &Store{db: ddb, wake: make(chan struct{}, 1), submitWake: make(chan struct{}, 1), pollWake: make(chan struct{}, 1), records: make(chan writeReq, maxGroup),
		quit: make(chan struct{}), writerDone: make(chan struct{}), migrated: migrated}
	go s.writer()
	return s, nil
}

// Close stops the group-commit writer and closes the database. Call it
// last, after the receiver and the fetcher have stopped; it is safe to call
// twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.writerDone
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.db.Path() }

// Wakeups delivers a value after a commit that made a batch due, so that an
// idle fetcher looks for work at once instead of on its next timer.
func (s *Store) Wakeups() <-chan struct{} { return s.wake }

func (s *Store) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Ping checks that the database accepts a write transaction. Its empty
// commit does not clear the last write error (it succeeds on a full disk),
// but its failure fails the store like any commit's.
func (s *Store) Ping() error {
	return s.db.update(func(tx *bolt.Tx) error { return nil }, false)
}

// putJSON stores v, encoded as JSON, under key in b.
func putJSON(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put([]byte(key), data)
}
