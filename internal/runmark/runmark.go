// Package runmark records how a run of the daemon ended, in a one-line
// file in the data directory, so that the next start can say so.
//
// A failed commit ends the process within milliseconds (the store fails
// closed and the daemon exits for its supervisor to restart it), and a
// kill ends it at once: neither leaves a scrape or a readiness probe the
// time to see it, and every counter starts again at 0 after the restart.
// The file survives the restart. It holds one of:
//
//	running since 2026-11-24T10:00:00.000Z
//	stopped cleanly at 2026-11-24T11:00:00.000Z
//	failed at 2026-11-24T10:30:00.000Z: failed commit: …
//
// Begin writes "running" at start. When nothing can be written at the end
// (a full disk, SIGKILL, a crash), that line is what tells the next start
// that the run did not stop cleanly. Every write is atomic (a temporary
// file in the same directory, fsynced, renamed over the marker, the
// directory fsynced), so a crash leaves the old line or the new one, and
// the file is 0600. It holds times and the text of batchhook's own errors
// (a failed commit names the database file and the system error), never
// data from a webhook or a provider.
package runmark

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batchhook/batchhook/internal/safefs"
)

// FileName is the marker's name in the data directory.
const FileName = "batchhook.run"

// tempPrefix starts the name of a marker being written; Begin removes the
// ones a crash left.
const tempPrefix = FileName + ".tmp-"

// timeLayout keeps milliseconds: two runs a restart apart are told apart.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// maxReason caps the reason kept, so a long error chain cannot grow the
// file (or the log line that repeats it) without bound.
const maxReason = 512

// maxRead caps what is read of a marker: a valid one is one short line.
const maxRead = 4096

// The line prefixes, one for each state.
const (
	running = "running since "
	stopped = "stopped cleanly at "
	failed  = "failed at "
)

// UncleanExit is the reason given for a run that recorded no end: it was
// killed, it crashed, or it failed where even the marker could not be
// written (a full disk; its log says more).
const UncleanExit = "unclean exit (killed or crashed)"

// End is how a previous run ended, as its marker says.
type End struct {
	// Failed is false only for a run that stopped cleanly.
	Failed bool
	// Reason says why, when Failed: UncleanExit, or what the run recorded
	// ("failed commit: …", "start failed: …", "stop failed: …").
	Reason string
	// When is when the run failed or stopped; for a run that recorded no
	// end, when it started (the last time it was known to be alive).
	When time.Time
}

// Marker is the run marker of one data directory. Its methods are called
// one after another by the daemon's lifecycle, never concurrently.
type Marker struct {
	dir string
}

// New returns the marker of the data directory dir, which must exist (the
// store has made it).
func New(dir string) *Marker { return &Marker{dir: dir} }

// Path is the marker file's path.
func (m *Marker) Path() string { return filepath.Join(m.dir, FileName) }

// Begin reads how the previous run ended (found is false when there is no
// marker: a first start, or a database older than the marker), then
// records this run as running since now. prev is valid even when err is
// not nil: err is about this run's line, which could not be written (a
// full disk). A previous "stopped cleanly" line is then removed, best
// effort, so that it cannot vouch for this run at the next start.
func (m *Marker) Begin(now time.Time) (prev End, found bool, err error) {
	prev, found, rerr := m.read()
	if rerr != nil {
		// A marker that cannot be read says no more than a missing one
		// would, except that something was there: report it as failed.
		prev, found = End{Failed: true, Reason: "the previous run's marker is unreadable: " + rerr.Error()}, true
	}
	m.removeTemps()
	if err := m.write(running + now.UTC().Format(timeLayout)); err != nil {
		if found && !prev.Failed {
			_ = os.Remove(m.Path())
		}
		return prev, found, fmt.Errorf("record the run as running in %s: %w", m.Path(), err)
	}
	return prev, found, nil
}

// Stopped records a clean stop at now.
func (m *Marker) Stopped(now time.Time) error {
	if err := m.write(stopped + now.UTC().Format(timeLayout)); err != nil {
		return fmt.Errorf("record the clean stop in %s: %w", m.Path(), err)
	}
	return nil
}

// Failed records that the run failed at now, for reason (made one line of
// at most maxReason bytes). On a full disk it fails too, and the "running"
// line Begin wrote stays: the next start still reports an unclean exit.
func (m *Marker) Failed(now time.Time, reason string) error {
	if err := m.write(failed + now.UTC().Format(timeLayout) + ": " + oneLine(reason)); err != nil {
		return fmt.Errorf("record the failure in %s: %w", m.Path(), err)
	}
	return nil
}

// read parses the marker; found is false when there is none.
func (m *Marker) read() (End, bool, error) {
	dir, err := os.Open(m.dir)
	if err != nil {
		return End{}, false, fmt.Errorf("open %s: %w", m.dir, err)
	}
	defer dir.Close()
	f, _, err := safefs.OpenFileAt(dir, FileName, os.O_RDONLY, false)
	if errors.Is(err, os.ErrNotExist) {
		return End{}, false, nil
	}
	if err != nil {
		return End{}, true, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return End{}, true, fmt.Errorf("read %s: %w", m.Path(), err)
	}
	end, err := parse(strings.TrimSuffix(string(raw), "\n"))
	if err != nil {
		return End{}, true, fmt.Errorf("%s: %w", m.Path(), err)
	}
	return end, true, nil
}

// parse reads one marker line.
func parse(line string) (End, error) {
	at := func(s string) (time.Time, error) {
		t, err := time.Parse(timeLayout, s)
		if err != nil {
			return t, fmt.Errorf("bad time in %q: %w", line, err)
		}
		return t, nil
	}
	switch {
	case strings.HasPrefix(line, running):
		t, err := at(strings.TrimPrefix(line, running))
		return End{Failed: true, Reason: UncleanExit, When: t}, err
	case strings.HasPrefix(line, stopped):
		t, err := at(strings.TrimPrefix(line, stopped))
		return End{When: t}, err
	case strings.HasPrefix(line, failed):
		ts, reason, ok := strings.Cut(strings.TrimPrefix(line, failed), ": ")
		if !ok || reason == "" {
			return End{}, fmt.Errorf("no reason in %q", line)
		}
		t, err := at(ts)
		return End{Failed: true, Reason: reason, When: t}, err
	}
	return End{}, fmt.Errorf("not a run marker line: %q", oneLine(line))
}

// createTemp is os.CreateTemp; a test makes it fail as a full disk does.
var createTemp = os.CreateTemp

// write replaces the marker with line, atomically.
func (m *Marker) write(line string) (err error) {
	tmp, err := createTemp(m.dir, tempPrefix+"*") // 0600, O_EXCL
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(line + "\n"); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), m.Path()); err != nil {
		return err
	}
	return syncDir(m.dir)
}

// removeTemps removes markers a crash left half-written (best effort: one
// left over is only a few bytes, and the next start tries again).
func (m *Marker) removeTemps() {
	entries, _ := os.ReadDir(m.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(m.dir, e.Name()))
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// oneLine makes reason one line of at most maxReason bytes (cut on a rune
// boundary).
func oneLine(reason string) string {
	reason = strings.Join(strings.Fields(reason), " ")
	if len(reason) <= maxReason {
		return reason
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + "…"
}
