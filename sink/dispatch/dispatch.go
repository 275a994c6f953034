// Package dispatch drives the sinks from their outboxes in the store: for
// each configured sink, BATCHHOOK_SINK_WORKERS workers lease the sink's next
// due delivery, hand the published export to the sink and record what it
// answered (delivered, retry after a backoff, failed). Each sink has its own
// loop and workers, so one slow or broken sink never holds back another,
// and the fetcher never waits for any of them.
//
// A lease lives only in this process's memory: the store keeps a delivery
// pending until its outcome is recorded, so after a crash or a shutdown it
// is simply due again. Sinks read only the published export (package
// export checks its manifest first), never the fetcher's staging.
package dispatch

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// Outbox is what the dispatcher needs from the store. Every write is one
// durable transaction; an outcome for a delivery queued again since it was
// leased returns store.ErrState (the new generation is delivered instead).
type Outbox interface {
	NextDelivery(sink string, now time.Time, busy func(batchID string) bool) (*store.Delivery, time.Time, error)
	MarkParts(batchID, sink string, gen uint64, n int) error
	RetryDelivery(batchID, sink string, gen uint64, at time.Time, kind, reason string, countAttempt bool) error
	FailDelivery(batchID, sink string, gen uint64, kind, reason string) error
	Delivered(batchID, sink string, gen uint64, now time.Time, dropExport bool) (bool, error)
	ExportChanged(batchID string, version int, now time.Time) (int, error)
	FileRemovals() ([]store.FileRemoval, error)
	FileRemovalDone(r store.FileRemoval) error
	DeliveryWakeups(sink string) <-chan struct{}
}

var _ Outbox = (*store.Store)(nil)

// Exports reads and removes published exports; *export.Dir implements it.
// Open returns ok=false when no complete export is in place.
type Exports interface {
	Open(batchID string) (*export.Snapshot, bool, error)
	Remove(batchID string) error
	Path(batchID string) string
}

var _ Exports = (*export.Dir)(nil)

// Observer counts outcomes (delivered, retry, failed) per sink.
type Observer interface {
	SinkOutcome(sink, outcome string)
}

type nopObserver struct{}

func (nopObserver) SinkOutcome(string, string) {}

// Options configures a Dispatcher.
type Options struct {
	Outbox  Outbox
	Exports Exports
	// Sinks are the configured non-file sinks by name.
	Sinks map[string]sink.Sink
	// Workers is the number of concurrent deliveries per sink (1..64).
	Workers int
	// KeepExports is true when file is in BATCHHOOK_SINKS; otherwise an
	// export is removed once every sink has delivered it.
	KeepExports bool
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// IdlePoll bounds how long an idle sink loop sleeps without a wakeup;
	// 0 = 1m.
	IdlePoll time.Duration
	Logger   zerolog.Logger
	Now      func() time.Time // nil = time.Now
	Jitter   func() float64   // nil = math/rand/v2
	Observer Observer         // nil = none
}

// Dispatcher is the set of per-sink loops.
type Dispatcher struct {
	o     Options
	sinks map[string]*sinkLoop
}

// sinkLoop is one sink's in-memory leases and local wakeup.
type sinkLoop struct {
	s    sink.Sink
	mu   sync.Mutex
	busy map[string]bool
	// freed is poked when a worker lets a delivery go, so a loop that
	// skipped it as busy looks again.
	freed chan struct{}
}

func (l *sinkLoop) isBusy(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy[id]
}

func (l *sinkLoop) hold(id string, on bool) {
	l.mu.Lock()
	if on {
		l.busy[id] = true
	} else {
		delete(l.busy, id)
	}
	l.mu.Unlock()
	if !on {
		select {
		case l.freed <- struct{}{}:
		default:
		}
	}
}

// New returns a Dispatcher; Run starts it.
func New(o Options) (*Dispatcher, error) {
	if o.Outbox == nil || o.Exports == nil {
		return nil, errors.New("dispatch: Outbox and Exports are required")
	}
	if o.Workers < 1 || o.Workers > 64 || o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		return nil, errors.New("dispatch: bad Workers or backoff")
	}
	if o.IdlePoll <= 0 {
		o.IdlePoll = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	d := &Dispatcher{o: o, sinks: map[string]*sinkLoop{}}
	for name, s := range o.Sinks {
		if s == nil || s.Name() != name {
			return nil, errors.New("dispatch: sink " + name + " is nil or names itself otherwise")
		}
		d.sinks[name] = &sinkLoop{s: s, busy: map[string]bool{}, freed: make(chan struct{}, 1)}
	}
	return d, nil
}

// Run finishes the export removals a previous run left undone, then runs
// one loop per sink until ctx ends; it waits for the workers, whose
// cancelled deliveries stay pending. It returns nil on a clean stop.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.sweepRemovals()
	var wg sync.WaitGroup
	for name, l := range d.sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.runSink(ctx, name, l)
		}()
	}
	wg.Wait()
	<-ctx.Done() // with no sink configured there is no loop to wait for
	return nil
}

// runSink leases the sink's due deliveries onto at most Workers goroutines.
func (d *Dispatcher) runSink(ctx context.Context, name string, l *sinkLoop) {
	log := d.o.Logger.With().Str("sink", name).Logger()
	slots := make(chan struct{}, d.o.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		del, next, err := d.o.Outbox.NextDelivery(name, d.o.Now(), l.isBusy)
		if err == nil && del != nil {
			l.hold(del.BatchID, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				defer l.hold(del.BatchID, false)
				d.process(ctx, name, l.s, del)
			}()
			continue
		}
		<-slots
		if err != nil {
			log.Error().Str("event", "sink_lease_failed").Err(err).Msg("could not read the sink's outbox")
		}
		wait := idleWait(err != nil, next, d.o.Now(), d.o.BackoffBase, d.o.IdlePoll)
		if !sleep(ctx, wait, d.o.Outbox.DeliveryWakeups(name), l.freed) {
			return
		}
	}
}

// RunOnce leases one due delivery of sinkName and processes it
// synchronously; it reports whether there was one. Tests drive the
// dispatcher through it.
func (d *Dispatcher) RunOnce(ctx context.Context, sinkName string) (bool, error) {
	l, ok := d.sinks[sinkName]
	if !ok {
		return false, errors.New("dispatch: no sink " + sinkName)
	}
	del, _, err := d.o.Outbox.NextDelivery(sinkName, d.o.Now(), l.isBusy)
	if err != nil || del == nil {
		return false, err
	}
	l.hold(del.BatchID, true)
	defer l.hold(del.BatchID, false)
	d.process(ctx, sinkName, l.s, del)
	return true, nil
}
