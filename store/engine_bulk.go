package store

import "fmt"

// BulkLoad runs fn with a Loader that writes through the nouns' own
// encoding and index code in large transactions, with bbolt's fsync off,
// and syncs the file once at the end. It is for building a database
// offline (bench/scale), never for a daemon serving: a commit that
// returns while loading is not durable, and a load cut short (a crash, an
// error) leaves a file that is to be deleted, not used. The daemon's own
// writes keep their fsync: the setting is restored when BulkLoad returns.
// Call it on a store nothing else writes to.
func (s *Store) BulkLoad(fn func(*Loader) error) error {
	s.db.NoSync, s.db.NoGrowSync = true, true
	defer func() { s.db.NoSync, s.db.NoGrowSync = false, false }()
	l := &Loader{s: s}
	if err := fn(l); err != nil {
		return err
	}
	if err := l.finish(); err != nil {
		return err
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("sync the loaded database: %w", err)
	}
	return nil
}
