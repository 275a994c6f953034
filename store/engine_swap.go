package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/batchhook/batchhook/internal/safefs"
)

// Restore and Compact replace the database file of a stopped daemon. Both
// hold the database's lock for their whole run and follow one order, so
// that batchhook.db is never missing, at any instant a crash can pick: the
// new file is written whole as a temporary file in the data directory and
// fsynced, the current file is hard-linked to its .bak name (restore; compact
// with keep) and the directory fsynced, and only then does one rename put
// the new file in place (the directory fsynced again). A crash before the
// rename leaves the old database and a temporary file, which the next
// Restore or Compact removes (SwapResult.Removed); after it, the new one.

// offlineLockWait is how long Restore and Compact wait for the database's
// lock: a running daemon holds it for as long as it runs.
const offlineLockWait = time.Second

// tempPrefix starts the name of every temporary database file.
const tempPrefix = FileName + ".tmp-"

// compactTxMax caps one transaction of the compaction copy, so a large
// database is not held in memory whole.
const compactTxMax = 16 << 20

// ErrDaemonRunning is returned by Restore and Compact when another process
// (a running daemon) holds the database.
var ErrDaemonRunning = fmt.Errorf("%w: daemon running? stop it first", ErrLocked)

// ErrNoDatabase is returned by Restore, without create, for a data
// directory that holds no database (or does not exist).
var ErrNoDatabase = errors.New("no database there")

// noDatabase says which of the two dir is: missing, or without FileName.
func noDatabase(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist", ErrNoDatabase, dir)
	}
	return fmt.Errorf("%w: %s has no %s", ErrNoDatabase, dir, FileName)
}

// SwapResult is what Restore or Compact did.
type SwapResult struct {
	Before, After int64  // the database file's size before and after
	Kept          string // the path the previous database was kept at, "" when none
	// Removed lists the leftover temporary files of an interrupted
	// restore or compaction that were removed first.
	Removed []string
	Summary Summary // the database now in place
}

// hooks lets the tests stop a swap between two steps (a crash there) and
// look at the files: step is "copied", "kept" or "renamed".
type hooks func(step string)

func (h hooks) at(step string) {
	if h != nil {
		h(step)
	}
}

// Restore replaces the database in dir with the backup file, which it
// checks first (Check); the current database is kept as
// batchhook.db.bak-<UTC time of now>. The daemon must be stopped:
// ErrDaemonRunning otherwise.
//
// A dir without a database is most often the wrong directory (a data
// directory named in the service's environment, not in the operator's
// shell): Restore refuses it with ErrNoDatabase, touching nothing, unless
// create is set, when it makes dir (0700) as needed and restores there.
func Restore(dir, file string, create bool, now time.Time) (SwapResult, error) {
	return restore(dir, file, create, now, nil)
}

func restore(dir, file string, create bool, now time.Time, h hooks) (res SwapResult, err error) {
	path := filepath.Join(dir, FileName)
	exists := true
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && !create:
		return res, noDatabase(dir)
	case errors.Is(err, os.ErrNotExist):
		// A new data directory, asked for: nothing to lock or keep. It
		// is made once the backup passed its check (a bad FILE leaves
		// nothing behind).
		exists = false
	case err != nil:
		return res, fmt.Errorf("stat %s: %w", path, err)
	default:
		// The lock is bbolt's flock, taken directly: the current file may
		// be one bbolt refuses to open (why one restores).
		lock, err := lockFile(path, offlineLockWait)
		if err != nil {
			return res, err
		}
		defer lock.Close()
		res.Before = st.Size()
	}
	want, err := Check(file)
	if err != nil {
		return res, err
	}
	if !exists {
		// Durable (each new level's parent fsynced): the database
		// renamed into it must not vanish with the directory.
		if err := safefs.MkdirAll(dir); err != nil {
			return res, fmt.Errorf("create data dir: %w", err)
		}
	}
	if res.Removed, err = removeLeftovers(dir); err != nil {
		return res, err
	}
	tmp, err := copyToTemp(dir, file, "restore")
	if err != nil {
		return res, err
	}
	h.at("copied")
	return finishSwap(res, dir, tmp, want, exists, now, h)
}

// Compact rewrites the database in dir with bbolt's compaction into a new
// file (free pages dropped, pages filled) and swaps it in. With keep, the
// previous file stays as batchhook.db.bak-<time>; without, it is gone once
// the new one is in place. The daemon must be stopped: ErrDaemonRunning
// otherwise.
func Compact(dir string, keep bool, now time.Time) (SwapResult, error) {
	return compact(dir, keep, now, nil)
}

func compact(dir string, keep bool, now time.Time, h hooks) (res SwapResult, err error) {
	path := filepath.Join(dir, FileName)
	src, before, err := lockOffline(path)
	if err != nil {
		return res, err
	}
	defer closeLock(src, &err)
	res.Before = before
	if res.Removed, err = removeLeftovers(dir); err != nil {
		return res, err
	}
	var want Summary
	if err := src.View(func(tx *bolt.Tx) error {
		var serr error
		want, serr = summarize(tx)
		return serr
	}); err != nil {
		return res, fmt.Errorf("compact: read %s: %w", path, err)
	}
	tmp, err := compactToTemp(dir, src)
	if err != nil {
		return res, err
	}
	h.at("copied")
	return finishSwap(res, dir, tmp, want, keep, now, h)
}

// finishSwap checks the temporary file against want, keeps the current
// database when keep, and renames tmp over it. It removes tmp on failure.
func finishSwap(res SwapResult, dir, tmp string, want Summary, keep bool, now time.Time, h hooks) (SwapResult, error) {
	path := filepath.Join(dir, FileName)
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	got, err := Check(tmp)
	if err != nil {
		return res, fmt.Errorf("check the new database: %w", err)
	}
	if !slices.Equal(got.Buckets, want.Buckets) {
		return res, fmt.Errorf("the new database's key counts %v differ from the source's %v", got.Buckets, want.Buckets)
	}
	if keep {
		if res.Kept, err = keepAs(dir, path, now); err != nil {
			return res, err
		}
	}
	if err := syncDir(dir); err != nil {
		return res, err
	}
	h.at("kept")
	if err := os.Rename(tmp, path); err != nil {
		return res, fmt.Errorf("put the new database in place: %w", err)
	}
	renamed = true
	h.at("renamed")
	if err := syncDir(dir); err != nil {
		return res, err
	}
	res.After, res.Summary = got.Size, got
	return res, nil
}

// lockOffline opens the database at path to hold its lock (exclusive,
// like a daemon's) and returns its size.
func lockOffline(path string) (*bolt.DB, int64, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("compact: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: offlineLockWait, OpenFile: openNoFollow})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, 0, fmt.Errorf("open %s: %w", path, ErrDaemonRunning)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	return db, st.Size(), nil
}

func closeLock(db *bolt.DB, err *error) {
	if db == nil {
		return
	}
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close the previous database: %w", cerr)
	}
}

// removeLeftovers removes the temporary files an interrupted restore or
// compaction left in dir (the caller holds the lock, so none is in use).
func removeLeftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list data dir: %w", err)
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			return removed, fmt.Errorf("remove leftover %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// copyToTemp copies file to a new 0600 temporary file in dir and fsyncs it.
func copyToTemp(dir, file, kind string) (string, error) {
	in, err := openNoFollow(file, os.O_RDONLY, 0)
	if err != nil {
		return "", fmt.Errorf("open backup: %w", err)
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, tempPrefix+kind+"-*")
	if err != nil {
		return "", fmt.Errorf("create temporary file in data dir: %w", err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("copy backup to %s: %w", out.Name(), err)
	}
	return out.Name(), nil
}

// compactToTemp writes src compacted into a new 0600 temporary file in dir,
// fsynced.
func compactToTemp(dir string, src *bolt.DB) (string, error) {
	f, err := os.CreateTemp(dir, tempPrefix+"compact-*")
	if err != nil {
		return "", fmt.Errorf("create temporary file in data dir: %w", err)
	}
	name := f.Name()
	f.Close()
	fail := func(err error) (string, error) {
		os.Remove(name)
		return "", err
	}
	dst, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: offlineLockWait, OpenFile: openNoFollow, NoSync: true})
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", name, err))
	}
	err = bolt.Compact(dst, src, compactTxMax)
	if err == nil {
		err = dst.Sync() // NoSync above: one fdatasync for the whole copy
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(fmt.Errorf("compact into %s: %w", name, err))
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open data dir to fsync it: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync data dir: %w", err)
	}
	return nil
}
