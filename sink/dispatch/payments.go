package dispatch

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// The payment dispatcher drives the payment sinks from the
// store's payment outbox: one loop per sink, each with ONE worker, since a
// sink receives events in log order. A pass reads a run of events after
// the sink's cursor, hands them to the sink, and records how far it got:
// the delivered prefix in one commit (PaymentsDelivered), then the outcome
// of the event that stopped the run (a retry after a backoff, or a
// permanent failure that the cursor passes). Nothing is recorded before
// the sink answered, so after a crash a sink is handed again the events it
// had delivered but whose record was lost: each payment sink absorbs that
// (the file sink's tail check, the http webhook-id, the nats Msg-Id; the
// kafka sink may write a run twice, as it may a batch).

// PaymentOutbox is what the payment dispatcher needs from the store. Each
// write is one durable transaction; an outcome for an event that is not
// the sink's head returns store.ErrState.
type PaymentOutbox interface {
	NextPayments(sink string, now time.Time, limit int) ([]store.PaymentRecord, time.Time, error)
	PaymentCursor(sink string) (store.PaymentCursor, error)
	PaymentsDelivered(sink string, through uint64, now time.Time) error
	RetryPayment(sink string, seq uint64, at time.Time, kind, reason string, countAttempt bool) error
	FailPayment(sink string, seq uint64, kind, reason string, now time.Time) error
	PaymentWakeups(sink string) <-chan struct{}
}

var _ PaymentOutbox = (*store.Store)(nil)

// PaymentObserver counts payment delivery outcomes (delivered, retry,
// failed) per sink, n events at a time.
type PaymentObserver interface {
	PaymentOutcome(sink, outcome string, n int)
}

type nopPaymentObserver struct{}

func (nopPaymentObserver) PaymentOutcome(string, string, int) {}

// KindBodyDropped is the failure kind of an event whose body was dropped
// (RECORD_RETENTION or an erasure) before it reached the sink: it is
// recorded failed, never sent with an empty body.
const KindBodyDropped = "body_dropped"

// KindBadBody is the failure kind of an event whose stored body is not
// JSON (the endpoint logs only JSON objects: a damaged log).
const KindBadBody = "bad_body"

// DefaultPaymentRun is how many events a sink is handed at once.
const DefaultPaymentRun = 100

// PaymentOptions configures a Payments dispatcher.
type PaymentOptions struct {
	Outbox PaymentOutbox
	// Sinks are the payment sinks by name (BATCHHOOK_SINKS minus exec).
	Sinks map[string]sink.PaymentSink
	// BackoffBase and BackoffMax: the batch deliveries' policy
	// (backoff.Delay), RetryAfter honoured and capped by BackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Run is the most events handed to a sink at once (0 =
	// DefaultPaymentRun).
	Run int
	// IdlePoll bounds how long an idle loop sleeps without a wakeup
	// (0 = 1m).
	IdlePoll time.Duration
	Logger   zerolog.Logger
	Now      func() time.Time // nil = time.Now
	Jitter   func() float64   // nil = math/rand/v2
	Observer PaymentObserver  // nil = none
}

// Payments is the set of per-sink payment loops.
type Payments struct {
	o PaymentOptions
}

// NewPayments checks o and returns the dispatcher; Run starts it.
func NewPayments(o PaymentOptions) (*Payments, error) {
	if o.Outbox == nil {
		return nil, errors.New("payment dispatch: Outbox is required")
	}
	if o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		return nil, errors.New("payment dispatch: bad backoff")
	}
	if o.Run <= 0 {
		o.Run = DefaultPaymentRun
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
		o.Observer = nopPaymentObserver{}
	}
	for name, s := range o.Sinks {
		if s == nil || s.Name() != name {
			return nil, errors.New("payment dispatch: sink " + name + " is nil or names itself otherwise")
		}
	}
	return &Payments{o: o}, nil
}

// Run runs one loop per payment sink until ctx ends, then waits for them:
// an attempt cut by the shutdown records nothing, so its events stay
// pending, due at once at the next start. It returns nil on a clean stop.
func (p *Payments) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for name, s := range p.o.Sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(ctx, name, s)
		}()
	}
	wg.Wait()
	<-ctx.Done()
	return nil
}

// loop runs passes for one sink: at once while there is work, otherwise
// until a wakeup (a new event, a rescheduled head), the head's retry time
// or IdlePoll.
func (p *Payments) loop(ctx context.Context, name string, s sink.PaymentSink) {
	log := p.o.Logger.With().Str("sink", name).Logger()
	for {
		worked, next, err := p.pass(ctx, name, s, log)
		if ctx.Err() != nil {
			return
		}
		if worked && err == nil {
			continue
		}
		if err != nil {
			log.Error().Str("event", "payment_record_failed").Err(err).Msg("could not read or write the sink's payment outbox; trying again")
		}
		wait := idleWait(err != nil, next, p.o.Now(), p.o.BackoffBase, p.o.IdlePoll)
		if !sleep(ctx, wait, p.o.Outbox.PaymentWakeups(name), nil) {
			return
		}
	}
}

// RunOnce makes one pass for sinkName: it hands the sink the run of due
// events and records the outcome. It reports whether there was anything
// to do. Tests drive the dispatcher through it.
func (p *Payments) RunOnce(ctx context.Context, sinkName string) (bool, error) {
	s, ok := p.o.Sinks[sinkName]
	if !ok {
		return false, errors.New("payment dispatch: no sink " + sinkName)
	}
	worked, _, err := p.pass(ctx, sinkName, s, p.o.Logger.With().Str("sink", sinkName).Logger())
	return worked, err
}
