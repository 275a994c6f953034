package daemon

import (
	"errors"
	"time"

	"github.com/batchhook/batchhook/internal/runmark"
	"github.com/batchhook/batchhook/store"
)

// The run marker (internal/runmark) is how a start learns that the run
// before it did not stop cleanly: a failed commit exits within
// milliseconds (it does not reopen the database) and a kill at once, too
// soon for a scrape or a probe, and the counters start again at 0. The daemon writes "running"
// as soon as it holds the database's lock, records a failed commit the
// moment it sees one, and records the end of the run when it stops.

// beginRun reads how the previous run ended, logs previous_run_failed when
// it did not stop cleanly, and marks this run as running. Called once the
// store is open: its lock keeps a second daemon on the same directory from
// touching the marker.
func (d *Daemon) beginRun() {
	d.run = runmark.New(d.cfg.DataDir)
	prev, found, err := d.run.Begin(time.Now())
	if err != nil {
		d.log.Warn().Str("component", "daemon").Str("event", "run_marker_failed").Err(err).
			Msg("the run marker could not be written: if this run ends uncleanly, the next start may not say so")
	}
	if !found || !prev.Failed {
		return
	}
	d.previousFailed, d.previousRun = true, prev
	ev := d.log.Warn().Str("component", "daemon").Str("event", "previous_run_failed").Str("reason", prev.Reason)
	if !prev.When.IsZero() {
		ev = ev.Str("when", prev.When.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	ev.Msg("the previous run did not stop cleanly (when: its failure, or its start when it recorded no end)")
}

// recordFailedCommit records the store's failure in the marker at once,
// before the stop that follows (which may not finish). On a full disk it
// cannot be written: the "running" line stays, and the next start reports
// an unclean exit.
func (d *Daemon) recordFailedCommit(err error) {
	if d.run == nil || !d.ended.CompareAndSwap(false, true) {
		return
	}
	if werr := d.run.Failed(time.Now(), "failed commit: "+err.Error()); werr != nil {
		d.log.Warn().Str("component", "daemon").Str("event", "run_marker_failed").Err(werr).
			Msg("the failed commit could not be recorded in the run marker; the next start reports an unclean exit")
	}
}

// recordEnd records how the run ended, once the store is closed: a failed
// commit (if recordFailedCommit did not already), a failed start or stop,
// or a clean stop.
func (d *Daemon) recordEnd(startErr, stopErr error) {
	if d.run == nil || !d.ended.CompareAndSwap(false, true) {
		return
	}
	now := time.Now()
	var err error
	switch serr := d.store.Err(); {
	case errors.Is(serr, store.ErrFailed):
		err = d.run.Failed(now, "failed commit: "+serr.Error())
	case startErr != nil:
		err = d.run.Failed(now, "start failed: "+startErr.Error())
	case stopErr != nil:
		err = d.run.Failed(now, "stop failed: "+stopErr.Error())
	default:
		err = d.run.Stopped(now)
	}
	if err != nil {
		d.log.Warn().Str("component", "daemon").Str("event", "run_marker_failed").Err(err).
			Msg("the end of the run could not be recorded in the run marker; the next start reports an unclean exit")
	}
}
