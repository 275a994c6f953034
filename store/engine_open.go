package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// initialMmap is the address space bbolt maps at open (virtual: the file
// and the memory in use grow with the data). A commit that needs a larger
// map waits until every read transaction has ended, so without it a
// backup streaming to a slow client could hold up writes (Backup).
const initialMmap = 1 << 30

// boltOptions are the database's settings. The free-page list is still
// written at every commit: with NoFreelistSync bbolt rebuilds it at open
// and in Tx.Check by walking every page, and that walk panics on a damaged
// page, so `batchhook backup --check` and restore would crash on a bad file
// instead of refusing it (engine_backup_test.go's damaged files). The file
// grows allocSize at a time instead of bbolt's 16 MiB, so its size stays
// close to what it holds (database bytes per batch).
func boltOptions(lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) *bolt.Options {
	return &bolt.Options{Timeout: lockTimeout, OpenFile: openFile, InitialMmapSize: initialMmap}
}

const allocSize = 4 << 20

// openBolt opens the bbolt file at path with the store's settings. Another
// process's lock held past lockTimeout is ErrLocked.
func openBolt(path string, lockTimeout time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, boltOptions(lockTimeout, openFile))
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w (is another batchhook running on this data dir?)", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.AllocSize = allocSize
	return db, nil
}
