package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/internal/safefs"
)

// FileName is the name of the database file inside the data directory.
const FileName = "batchhook.db"

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
	// backfills are the walks over every record Open made (migrate.go).
	backfills []Backfill
}

// MigratedRecords returns how many batch records Open moved from the
// layout of earlier versions (0 once a database is migrated).
func (s *Store) MigratedRecords() int { return s.migrated }

// Backfills returns the walks over every batch record Open made to fill an
// index this database lacked (none once a database is up to date: each
// index is filled once).
func (s *Store) Backfills() []Backfill { return s.backfills }

// Open opens (creating if needed) the database in dir, with mode 0600 and
// its directory 0700. A directory or database file it makes is durable
// before it returns (its parent directory fsynced): a commit promises
// nothing if the file it went to can vanish with its entry. It waits at
// most lockTimeout for another process's lock and then fails with
// ErrLocked, so a second daemon on the same data directory stops at once
// with a clear message instead of hanging. A database file that is a
// symbolic link is refused with ErrSymlink.
func Open(dir string, lockTimeout time.Duration) (*Store, error) {
	return open(dir, lockTimeout, openNoFollow)
}

// open is Open with the function that opens the file (tests wrap it to
// reach the file handle and make a commit fail).
func open(dir string, lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) (*Store, error) {
	if err := safefs.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if err := safefs.Settle(dir); err != nil { // made by an earlier run, perhaps never synced
		return nil, fmt.Errorf("open data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	_, statErr := os.Lstat(path)
	db, err := openBolt(path, lockTimeout, openFile)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// bbolt synced the new file's first pages, never its entry.
		if err := safefs.SyncDir(dir); err != nil {
			db.Close()
			return nil, fmt.Errorf("make %s durable: %w", path, err)
		}
	}
	migrated, backfills, err := prepare(db)
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
		quit: make(chan struct{}), writerDone: make(chan struct{}), migrated: migrated, backfills: backfills}
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

// putJSON stores v, encoded as JSON, under key in b.
func putJSON(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put([]byte(key), data)
}
