// Package memreclaim gives memory back to the system after a flood.
//
// The Go runtime frees memory only after a garbage collection, and
// collects only when the program allocates. A daemon that held thousands
// of stalled connections and then goes quiet keeps their stacks and
// buffers for minutes (once 944 MB six minutes after the connections
// closed; here 190 MB still held four minutes later). So a Reclaimer
// watches the runtime: when no collection has run for a while and the
// runtime still holds a good deal of memory, it collects and returns
// everything free to the system (debug.FreeOSMemory). Under steady load
// collections keep running and it never acts.
package memreclaim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/rs/zerolog"
)

// Stats is what the Reclaimer reads from the runtime.
type Stats struct {
	// GCCycles counts completed collections.
	GCCycles uint64
	// Held is the memory the runtime has mapped and not given back.
	Held uint64
}

// ReadStats reads Stats from runtime/metrics.
func ReadStats() Stats {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	return Stats{GCCycles: s[0].Value.Uint64(), Held: s[1].Value.Uint64() - s[2].Value.Uint64()}
}

// Reclaimer returns memory after a quiet spell. Run it in its own goroutine.
type Reclaimer struct {
	// Every is how often it looks; Quiet is how long no collection must
	// have run; Floor is the held memory below which it does nothing.
	// When a return gives back less than Floor/4, the next one waits twice
	// as long, up to MaxQuiet, so a large live heap is not collected over
	// and over for nothing.
	Every, Quiet, MaxQuiet time.Duration
	Floor                  uint64
	Logger                 zerolog.Logger

	read  func() Stats
	free  func()
	now   func() time.Time
	seen  uint64
	since time.Time
	wait  time.Duration
}

// New returns a Reclaimer that looks every 5 s and acts after 15 s (up to
// a minute) without a collection while the runtime holds more than 32 MiB.
func New(log zerolog.Logger) *Reclaimer {
	return &Reclaimer{Every: 5 * time.Second, Quiet: 15 * time.Second, MaxQuiet: time.Minute, Floor: 32 << 20,
		Logger: log, read: ReadStats, free: debug.FreeOSMemory, now: time.Now}
}

// Run looks every Every until ctx ends.
func (r *Reclaimer) Run(ctx context.Context) {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.runOnce()
		}
	}
}

// runOnce is one look; it reports whether it returned memory.
func (r *Reclaimer) runOnce() bool {
	s, now := r.read(), r.now()
	if s.GCCycles != r.seen || r.since.IsZero() {
		r.seen, r.since = s.GCCycles, now
		return false
	}
	if r.wait == 0 {
		r.wait = r.Quiet
	}
	if now.Sub(r.since) < r.wait || s.Held < r.Floor {
		return false
	}
	// Twice: what sync.Pools held survives one collection (it moves to
	// their victim cache) and goes with the second.
	r.free()
	r.free()
	after := r.read()
	r.seen, r.since = after.GCCycles, now
	ev := r.Logger.Info()
	if after.Held+r.Floor/4 > s.Held { // little came back: the memory is in use
		r.wait, ev = min(2*r.wait, r.MaxQuiet), r.Logger.Debug()
	} else {
		r.wait = r.Quiet
	}
	ev.Str("event", "memory_returned").Uint64("held_bytes_before", s.Held).Uint64("held_bytes_after", after.Held).
		Msg("no collection for a while; free memory returned to the system")
	return true
}
