package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/batchhook/batchhook/store"
)

// Options describe the database to build.
type Options struct {
	// Dir is the directory to build in: the database goes to
	// Dir/data/batchhook.db, the daemon's DATA_DIR layout.
	Dir string
	// Batches are spread evenly over the last Days days, the newest a
	// moment before Now.
	Batches int
	Days    int
	// FullDays and ExportDays are the record and export retentions the
	// shape follows (RECORD_RETENTION 2160h and EXPORT_RETENTION 720h by
	// default): a batch finished less than ExportDays ago is exported, one
	// less than FullDays ago keeps its whole record (raw body, cursors),
	// older ones are tombstones.
	FullDays   int
	ExportDays int
	// Due is how far past each retention the shape still keeps data, as a
	// daemon stopped for Due before Now leaves it: the first purge pass of
	// a daemon started on it has about Due's worth of exports, records and
	// payment bodies to purge. 0 leaves none due.
	Due time.Duration
	// Sinks is how many delivery sinks (other than file) every export went
	// to, the first of deliverySinks.
	Sinks int
	// ExportItems is how many result items the export of each batch due
	// at the first purge pass holds on disk (0: no export is written).
	ExportItems int
	// PaymentsPerMinute is the payments log's rate over the same Days.
	PaymentsPerMinute float64
	// Seed makes the ids and bodies; the same options build the same
	// database, but for the times, which count back from Now.
	Seed uint64
	Now  time.Time
}

// deliverySinks are the sinks deliveries go to, in the order Sinks takes
// them; paymentSinks are those of them that also take payment events
// (with file, which is always configured).
var (
	deliverySinks = []string{"http", "exec", "kafka", "nats"}
	paymentSinks  = map[string]bool{"http": true, "kafka": true, "nats": true}
)

// The shape's fixed parts. A batch is 1,000 CPFs (the provider's maximum),
// fetched in 10 pages of 100 items; one submission of 3 chunks is made per
// submissionEvery batches; the newest inflight batches are still queued;
// the newest exports' deliveries end pending or failed (pendingTail,
// failedEvery).
const (
	cpfsPerBatch    = 1000
	pagesPerBatch   = 10
	itemBytes       = 420
	fetchTime       = 90 * time.Second
	submissionEvery = 1000
	chunksPerSub    = 3
	inflight        = 3
	pendingTail     = 5
	failedEvery     = 4000
	// purgeLag bounds how long after its due time the purger got to a
	// batch (PURGE_INTERVAL, 1h by default).
	purgeLag = time.Hour
)

func (o *Options) check() error {
	switch {
	case o.Dir == "":
		return errors.New("-dir is required")
	case o.Batches < 1:
		return errors.New("-batches must be at least 1")
	case o.Days < 1:
		return errors.New("-days must be at least 1")
	case o.FullDays < 0 || o.ExportDays < 0 || o.Due < 0:
		return errors.New("-full-days, -export-days and -due must not be negative")
	case o.FullDays > 0 && o.ExportDays > o.FullDays:
		return errors.New("-export-days must not be more than -full-days (an export outlives its full record only when RECORD_RETENTION is shorter, which this shape does not build)")
	case o.Sinks < 0 || o.Sinks > len(deliverySinks):
		return fmt.Errorf("-sinks must be from 0 to %d", len(deliverySinks))
	case o.ExportItems < 0 || o.ExportItems > cpfsPerBatch:
		return fmt.Errorf("-export-items must be from 0 to %d", cpfsPerBatch)
	case o.PaymentsPerMinute < 0:
		return errors.New("-payments-per-minute must not be negative")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	o.Now = o.Now.UTC().Truncate(time.Second)
	return nil
}

func (o *Options) span() time.Duration { return time.Duration(o.Days) * 24 * time.Hour }
func (o *Options) start() time.Time    { return o.Now.Add(-o.span()) }

// exportKeep and fullKeep: a batch finished less than this long ago still
// has its export, or its whole record.
func (o *Options) exportKeep() time.Duration {
	return time.Duration(o.ExportDays)*24*time.Hour + o.Due
}
func (o *Options) fullKeep() time.Duration { return time.Duration(o.FullDays)*24*time.Hour + o.Due }

// sinks returns the delivery sinks of the shape.
func (o *Options) sinks() []string { return deliverySinks[:o.Sinks] }

// batchPlan is what the shape decides for batch i: its times and where
// the pipeline left it. Everything is a function of the options and i.
type batchPlan struct {
	state    store.State
	created  time.Time
	finished time.Time // zero while queued
	// exportPurged and recordPurged are when the purger deleted the
	// export and reduced the record (zero: not yet).
	exportPurged, recordPurged time.Time
	// submission: the batch was submitted by batchhook, as chunk chunk of
	// submission sub.
	submitted bool
	sub       int
	chunk     int
	notFound  int64
}

// mix is splitmix64: a batch's own random numbers, from the seed and its
// index, without keeping a generator's state per batch.
func mix(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fraction returns a number in [0, 1) from r.
func fraction(r uint64) float64 { return float64(r>>11) / (1 << 53) }

func (o *Options) plan(i int) batchPlan {
	step := o.span() / time.Duration(o.Batches)
	p := batchPlan{created: o.start().Add(step*time.Duration(i) + step/2).Truncate(time.Millisecond)}
	r := mix(o.Seed, uint64(i))
	p.notFound = int64(r % 61)
	if s := i % submissionEvery; s < chunksPerSub && i < o.Batches-inflight {
		p.submitted, p.sub, p.chunk = true, i/submissionEvery, s
	}
	if i >= o.Batches-inflight {
		p.state = store.StateQueued
		return p
	}
	p.finished = p.created.Add(fetchTime)
	age := o.Now.Sub(p.finished)
	lag := time.Duration(fraction(mix(o.Seed^0x5eed, uint64(i))) * float64(purgeLag))
	if o.ExportDays == 0 || age < o.exportKeep() {
		p.state = store.StateExported // EXPORT_RETENTION 0 keeps every export
	} else {
		p.state = store.StatePurged
		p.exportPurged = o.purgedAt(p.finished, o.ExportDays, lag)
	}
	if o.FullDays > 0 && age >= o.fullKeep() {
		p.recordPurged = o.purgedAt(p.finished, o.FullDays, lag)
	}
	return p
}

// purgedAt is when a pass of the purger found due, lag after, what was
// counted from `from` and kept days: never after Now.
func (o *Options) purgedAt(from time.Time, days int, lag time.Duration) time.Time {
	at := from.Add(time.Duration(days) * 24 * time.Hour).Add(lag)
	if at.After(o.Now) {
		return o.Now
	}
	return at
}

// deliveryPlan is how batch i's delivery to the sink at index k ended.
func (o *Options) deliveryPlan(i, k int) store.DeliveryState {
	last := o.Batches - inflight - 1 // the newest exported batch
	switch {
	case k == o.Sinks-1 && i > last-pendingTail:
		return store.DeliveryPending
	case k == 0 && i > last-o.Batches/o.Days && i%failedEvery == 1:
		return store.DeliveryFailed // a few in the last day
	}
	return store.DeliveryDelivered
}

// Expected is what a built database holds, by the shape.
type Expected struct {
	States      map[store.State]int
	Deliveries  map[string]map[store.DeliveryState]int // by sink
	Submissions int
	Chunks      int
	Payments    int
	// PaymentBodies counts the payment events that keep their body.
	PaymentBodies int
	// DueExports and DueRecords count the exports and records a purge
	// pass at Now with the retentions of the shape finds due.
	DueExports, DueRecords int
}

// expect computes Expected from the options alone.
func (o *Options) expect() Expected {
	e := Expected{States: map[store.State]int{}, Deliveries: map[string]map[store.DeliveryState]int{}}
	for _, s := range o.sinks() {
		e.Deliveries[s] = map[store.DeliveryState]int{}
	}
	recordDue := o.Now.Add(-time.Duration(o.FullDays) * 24 * time.Hour)
	for i := range o.Batches {
		p := o.plan(i)
		e.States[p.state]++
		if p.submitted {
			e.Chunks++
			if p.chunk == 0 {
				e.Submissions++
			}
		}
		if p.state == store.StateQueued {
			continue
		}
		for k, s := range o.sinks() {
			e.Deliveries[s][o.deliveryPlan(i, k)]++
		}
		if o.dueExport(p) {
			e.DueExports++
		}
		if p.recordPurged.IsZero() && o.FullDays > 0 && !p.finished.After(recordDue) {
			e.DueRecords++
		}
	}
	e.Payments = o.payments()
	for j := range e.Payments {
		if o.FullDays == 0 || o.Now.Sub(o.paymentAt(j)) < o.fullKeep() {
			e.PaymentBodies++
		}
	}
	return e
}

// payments returns how many payment events the log holds.
func (o *Options) payments() int {
	return int(o.PaymentsPerMinute * o.span().Minutes())
}

// paymentAt is when payment event j was received, evenly over Days.
func (o *Options) paymentAt(j int) time.Time {
	step := o.span() / time.Duration(max(o.payments(), 1))
	return o.start().Add(step*time.Duration(j) + step/2).Truncate(time.Millisecond)
}
