package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/store"
)

// The offline commands work on the database file of a stopped daemon
// (they take its lock and refuse while it runs). They read only
// BATCHHOOK_DATA_DIR (or --data-dir): none of the daemon's secrets.

const restoreUsage = `Usage:
  batchhook restore FILE --data-dir DIR [--create]

With the daemon stopped: checks the backup FILE, keeps the current database
as batchhook.db.bak-<UTC time>, and swaps FILE in atomically (batchhook.db is
never missing, whatever instant a crash picks). The first line printed names
the target directory and where it came from.

--data-dir names the daemon's data directory (the service's
BATCHHOOK_DATA_DIR: /var/lib/batchhook in the systemd unit); without it,
BATCHHOOK_DATA_DIR, then ./data. A target without a batchhook.db is refused
(exit 2), since it is most often the wrong directory; --create restores into
it anyway, making it (0700) if needed. Environment: BATCHHOOK_DATA_DIR,
BATCHHOOK_EXPORT_DIR (default DATA_DIR/exports).
`

const compactUsage = `Usage:
  batchhook compact [--keep] [--data-dir DIR]

With the daemon stopped: rewrites the database without its free pages into a
new file, checks it holds every key, and swaps it in; prints the sizes
before and after. --keep keeps the previous file as batchhook.db.bak-<UTC
time>. Environment: BATCHHOOK_DATA_DIR (default ./data).
`

// offlineFlags parses args with --data-dir and the extra flags set on fs,
// and returns the positional arguments and the directories; code is the
// exit code when the command must stop here, -1 otherwise.
func offlineFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (pos []string, dirs config.Offline, code int) {
	dataDir := fs.String("data-dir", "", "the daemon's data directory (default $BATCHHOOK_DATA_DIR or ./data)")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, dirs, 0
	}
	if err != nil {
		return nil, dirs, 2
	}
	if dirs, err = config.LoadOffline(*dataDir); err != nil {
		fmt.Fprintf(stderr, "batchhook %s: %v\n", fs.Name(), err)
		return nil, dirs, 2
	}
	// Absolute, so that every path printed (the directory, the kept copy,
	// leftovers) can be pasted from any working directory.
	if dirs.DataDir, err = filepath.Abs(dirs.DataDir); err == nil {
		dirs.ExportDir, err = filepath.Abs(dirs.ExportDir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "batchhook %s: %v\n", fs.Name(), err)
		return nil, dirs, 1
	}
	return pos, dirs, -1
}

func restoreCmd(_ context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("restore", restoreUsage, stderr)
	create := fs.Bool("create", false, "restore into a directory without a database (made 0700 if missing)")
	pos, dirs, code := offlineFlags(fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, restoreUsage)
		return 2
	}
	dir := dirs.DataDir
	// First, before anything is changed: the directory, and why this one.
	fmt.Fprintf(stdout, "data directory: %s (from %s)\n", dir, dirs.DataDirFrom)
	res, err := store.Restore(dir, pos[0], *create, time.Now())
	reportLeftovers(stdout, res.Removed)
	if errors.Is(err, store.ErrNoDatabase) {
		fmt.Fprintf(stderr, "batchhook restore: %v (target from %s); name the daemon's data directory with "+
			"--data-dir DIR (the systemd unit's is /var/lib/batchhook), or pass --create to restore into a new one there\n",
			err, dirs.DataDirFrom)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "batchhook restore: %v\n", err)
		return 1
	}
	if res.Kept != "" {
		fmt.Fprintf(stdout, "previous database kept as %s (%d bytes)\n", res.Kept, res.Before)
	}
	fmt.Fprintf(stdout, "restored %s into %s: %d bytes, transaction %d\n", pos[0], dir, res.After, res.Summary.TxID)
	printSummary(stdout, res.Summary)
	if err := reportExports(stdout, dirs); err != nil {
		fmt.Fprintf(stderr, "batchhook restore: the database is restored, but its exports could not be compared: %v\n", err)
		return 1
	}
	return 0
}

func compactCmd(_ context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("compact", compactUsage, stderr)
	keep := fs.Bool("keep", false, "keep the previous file as batchhook.db.bak-<UTC time>")
	pos, dirs, code := offlineFlags(fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprint(stderr, compactUsage)
		return 2
	}
	dir := dirs.DataDir
	res, err := store.Compact(dir, *keep, time.Now())
	reportLeftovers(stdout, res.Removed)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook compact: %v\n", err)
		return 1
	}
	if res.Kept != "" {
		fmt.Fprintf(stdout, "previous database kept as %s\n", res.Kept)
	}
	fmt.Fprintf(stdout, "compacted %s: %d bytes before, %d after (%s)\n", dir, res.Before, res.After, compactGain(res.Before, res.After))
	return 0
}

// compactGain says what a compaction's sizes mean. The new file is not
// always smaller: bbolt grows a new file in steps that double while it is
// small, so a small database with few free pages (one restored from a
// backup is exactly its pages long) can come out a step larger, and a
// ratio over 100% would read as if something had gone wrong.
func compactGain(before, after int64) string {
	switch {
	case after < before:
		return fmt.Sprintf("%d bytes freed, %.1f%% of the size before", before-after, 100*float64(after)/float64(before))
	case after == before:
		return "the same size: no free pages to give back"
	default:
		return fmt.Sprintf("%d bytes larger: bbolt grows a new file in steps that double while it is small, so a small database "+
			"with few free pages can come out a step larger; nothing is lost, and compact gives space back after a large purge", after-before)
	}
}

func reportLeftovers(w io.Writer, removed []string) {
	for _, p := range removed {
		fmt.Fprintf(w, "removed %s, left by an interrupted restore or compaction\n", p)
	}
}
