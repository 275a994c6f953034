package submit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/backoff"
	"github.com/batchhook/batchhook/store"
)

// Queue is what the submitter needs from the store.
type Queue interface {
	NextChunk() (*store.Chunk, error)
	ChunkSending(seq uint64, index int, now time.Time) error
	ChunkRequeue(seq uint64, index int, reason string, reached bool, now time.Time) error
	ChunkGiveUp(seq uint64, index int, state store.ChunkState, reason string, now time.Time) error
	ChunkSubmitted(seq uint64, index int, batchID string, pollAt, now time.Time) (*store.Batch, error)
	Counts() (map[store.State]int, error)
	SubmitWakeups() <-chan struct{}
}

var _ Queue = (*store.Store)(nil)

// Sender sends one chunk to the provider; *Client implements it.
type Sender interface {
	Submit(ctx context.Context, cpfs []string) Result
}

// Observer is told of each submission attempt's outcome.
type Observer interface {
	SubmissionAttempt(outcome string)
}

// SubmitterOptions configures a Submitter.
type SubmitterOptions struct {
	Queue  Queue
	Sender Sender
	Logger zerolog.Logger
	// PerMinute and MaxInFlight are the provider's limits (docs/provider-api.md §8).
	PerMinute   int
	MaxInFlight int
	// Recent are the send times of the last minute, from the store.
	Recent []time.Time
	// ReconcileAfter is how long after a submission its batch is first
	// polled if no batch.completed came.
	ReconcileAfter time.Duration
	BackoffBase    time.Duration
	BackoffMax     time.Duration
	// Recheck is how often a submitter held back by MaxInFlight looks
	// again; 0 = 1s.
	Recheck time.Duration
	// IdlePoll bounds an idle wait without a wakeup; 0 = 1m.
	IdlePoll time.Duration
	Now      func() time.Time                                // nil = time.Now
	Sleep    func(ctx context.Context, d time.Duration) bool // nil = a timer; false when ctx ended
	Jitter   func() float64                                  // nil = math/rand/v2
	Observer Observer                                        // nil = none
}

// Submitter sends waiting chunks, one at a time and in order, within the
// provider's limits.
type Submitter struct {
	o        SubmitterOptions
	log      zerolog.Logger
	limit    *Limiter
	failures int       // consecutive attempts that were not accepted
	pause    time.Time // no attempt before this (after a 429, 5xx, auth error)
	authHold bool      // the pause is for a refused API key
	held     bool      // logged that MaxInFlight holds chunks back
	// unrecorded is a chunk the provider accepted whose record failed: it
	// is recorded before anything else is sent, so its batch id is not lost.
	unrecorded *accepted
	// resume is signalled by Resume (a new API key): an auth pause ends.
	resume     chan struct{}
	resumeAuth atomic.Bool
	// wait is what holds the submitter back at its last step (Wait).
	wait atomic.Pointer[Wait]
	// lastFail is the last attempt the provider did not accept (its chunk
	// waits to be sent again), until an attempt settles; Wait reports it.
	lastFail Result
}

// NewSubmitter checks o and returns a Submitter.
func NewSubmitter(o SubmitterOptions) (*Submitter, error) {
	if o.Queue == nil || o.Sender == nil {
		return nil, errors.New("submit: Queue and Sender are required")
	}
	if o.PerMinute < 1 || o.MaxInFlight < 1 || o.ReconcileAfter <= 0 || o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		return nil, errors.New("submit: bad PerMinute, MaxInFlight, ReconcileAfter or backoff")
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Second
	}
	if o.IdlePoll <= 0 {
		o.IdlePoll = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Submitter{o: o, log: o.Logger, limit: NewLimiter(o.PerMinute, time.Minute, o.Recent),
		resume: make(chan struct{}, 1)}, nil
}

type accepted struct {
	chunk   *store.Chunk
	batchID string
	at      time.Time
}

// sendGrace is how long a submission already on the wire may finish after
// shutdown began: cutting it would turn an accepted chunk into
// submit_unknown.
const sendGrace = 10 * time.Second

type nopObserver struct{}

func (nopObserver) SubmissionAttempt(string) {}
func (nopObserver) Reconciled()              {}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Run sends chunks until ctx ends.
func (s *Submitter) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		wait, err := s.Step(ctx)
		if err != nil {
			s.log.Error().Str("event", "submit_store_error").Err(err).Msg("submitter could not use the store; retrying")
			wait = s.o.BackoffBase
		}
		if wait == 0 {
			continue
		}
		waitOrWake(ctx, s.o.Sleep, wait, s.o.Queue.SubmitWakeups(), s.resume)
	}
	return nil
}

// Resume ends a pause caused by a refused API key (the daemon calls it
// after a reload replaced the key). Safe from any goroutine.
func (s *Submitter) Resume() {
	s.resumeAuth.Store(true)
	select {
	case s.resume <- struct{}{}:
	default:
	}
}

// waitOrWake sleeps for d, or less when wake or resume delivers or ctx
// ends (a nil resume never delivers).
func waitOrWake(ctx context.Context, sleep func(context.Context, time.Duration) bool, d time.Duration, wake, resume <-chan struct{}) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { sleep(wctx, d); close(done) }()
	select {
	case <-done:
	case <-wake:
		cancel()
		<-done
	case <-resume:
		cancel()
		<-done
	}
}

// Step sends the chunk at the head of the queue if the limits allow and
// returns how long to wait before the next step (0 = go on at once).
// Tests drive the submitter through it with a fake clock.
func (s *Submitter) Step(ctx context.Context) (time.Duration, error) {
	if a := s.unrecorded; a != nil {
		if err := s.record(a); err != nil {
			return s.o.BackoffBase, err
		}
		s.unrecorded = nil
	}
	c, err := s.o.Queue.NextChunk()
	if err != nil || c == nil {
		if c == nil && err == nil {
			s.lastFail = Result{} // its chunk left the queue (erased, say)
		}
		s.setWait("", time.Time{}, 0)
		return s.o.IdlePoll, err
	}
	now := s.o.Now()
	if s.resumeAuth.Swap(false) && s.authHold {
		s.pause, s.failures = time.Time{}, 0
	}
	if now.Before(s.pause) {
		s.setWait(WaitBackoff, s.pause, 0)
		return s.pause.Sub(now), nil
	}
	counts, err := s.o.Queue.Counts()
	if err != nil {
		return 0, err
	}
	if inFlight := counts[store.StateSubmitted] + counts[store.StateTracked]; inFlight >= s.o.MaxInFlight {
		if !s.held {
			s.held = true
			s.log.Info().Str("event", "submit_held").Int("in_flight", inFlight).Int("max_in_flight", s.o.MaxInFlight).
				Msg("chunks wait: the provider's limit of batches in flight is reached (BATCHHOOK_MAX_IN_FLIGHT)")
		}
		s.setWait(WaitInFlight, time.Time{}, inFlight)
		return s.o.Recheck, nil
	}
	s.held = false
	if at := s.limit.Next(now); at.After(now) {
		s.setWait(WaitRateLimit, at, 0)
		return at.Sub(now), nil
	}
	s.setWait("", time.Time{}, 0)
	if c.State == store.ChunkSending {
		// Only ResolveSending at start may decide about a chunk a previous
		// run left sending; meeting one here means it was not called.
		return 0, fmt.Errorf("chunk %s/%d is still sending: ResolveSending must run first", c.SubmissionID, c.Index)
	}
	if err := s.o.Queue.ChunkSending(c.Seq, c.Index, now); err != nil {
		return 0, err
	}
	// The request is not cut by a shutdown once it has started (only after
	// sendGrace): an answer lost to our own stop would make the chunk
	// submit_unknown.
	sendCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	res := s.o.Sender.Submit(sendCtx, c.CPFs)
	stop()
	cancel()
	s.o.Observer.SubmissionAttempt(string(res.Outcome))
	return s.settle(ctx, c, res)
}

// settle records the outcome of one attempt. A chunk leaves sending only
// through settle, so a failed move out of it is retried in place (see
// retryStore) rather than handed back to Step, which would find the chunk
// still sending and stop there until a restart.
func (s *Submitter) settle(ctx context.Context, c *store.Chunk, res Result) (time.Duration, error) {
	now := s.o.Now()
	log := s.log.With().Str("submission_id", c.SubmissionID).Int("chunk", c.Index).Int("cpfs", c.CPFCount).
		Str("outcome", string(res.Outcome)).Logger()
	if res.Outcome != OutcomeNotSent {
		// Every attempt that reached the provider counts against its rate,
		// at the time of the answer: never earlier than it arrived.
		s.limit.Record(now)
	}
	switch res.Outcome {
	case OutcomeSubmitted:
		s.failures, s.lastFail = 0, Result{}
		a := &accepted{chunk: c, batchID: res.BatchID, at: now}
		if err := s.record(a); err != nil {
			// The provider has the batch but the store could not say so:
			// nothing else is sent until it is recorded (Step retries);
			// if batchhook stops first, the chunk is submit_unknown at the
			// next start and this line holds the id.
			s.unrecorded = a
			log.Error().Str("event", "submit_unrecorded").Str("batch_id", res.BatchID).Err(err).
				Msg("the provider accepted the chunk but batchhook could not record it yet; retrying (if it stops first, run: batchhook track " + res.BatchID + ")")
			return s.o.BackoffBase, err
		}
		return 0, nil
	case OutcomeRejected:
		s.failures, s.lastFail = 0, Result{}
		log.Error().Str("event", "chunk_failed").Str("reason", res.Reason).Msg("the provider refused the chunk; it is not sent again")
		return 0, s.retryStore(ctx, log, func() error {
			return s.o.Queue.ChunkGiveUp(c.Seq, c.Index, store.ChunkFailed, res.Reason, now)
		})
	case OutcomeUnknown:
		s.failures, s.lastFail = 0, Result{}
		log.Error().Str("event", "chunk_submit_unknown").Str("reason", res.Reason).
			Msg("the provider may have accepted the chunk; it is not sent again automatically (see docs/operations.md, submit_unknown)")
		return 0, s.retryStore(ctx, log, func() error {
			return s.o.Queue.ChunkGiveUp(c.Seq, c.Index, store.ChunkUnknown, res.Reason, now)
		})
	default: // not sent, 429, 503, auth: the chunk stays first in line
		s.failures++
		delay := backoff.Delay(s.failures, s.o.BackoffBase, s.o.BackoffMax, res.RetryAfter, s.o.Jitter())
		s.pause, s.authHold = now.Add(delay), res.Outcome == OutcomeAuth
		// Said now, not at the next step: Run sleeps through the backoff,
		// and the admin API must show the reason meanwhile.
		s.lastFail = Result{Outcome: res.Outcome, Reason: res.Reason}
		s.setWait(WaitBackoff, s.pause, 0)
		log.Warn().Str("event", "chunk_retry").Str("reason", res.Reason).Int("attempt", c.Attempts+1).
			Int64("retry_in_ms", delay.Milliseconds()).Msg("chunk not accepted; it waits and is sent again")
		return delay, s.retryStore(ctx, log, func() error {
			return s.o.Queue.ChunkRequeue(c.Seq, c.Index, res.Reason, res.Outcome != OutcomeNotSent, now)
		})
	}
}

// retryStore runs a transition out of sending until it commits or ctx
// ends, backing off between attempts. A transient store error must not
// leave the chunk sending: every later Step would fail on it, and after a
// restart a chunk that never left (or was refused) would become
// submit_unknown. The error returned is ctx's, wrapped with the last store
// error, when batchhook stops first. A store that failed closed (ErrFailed)
// never takes a write again: retrying is pointless, the daemon exits, and
// the chunk left sending is submit_unknown at the next start (the safe
// answer; the chunk_retry or chunk_failed line above says what happened).
func (s *Submitter) retryStore(ctx context.Context, log zerolog.Logger, move func() error) error {
	for attempt := 1; ; attempt++ {
		err := move()
		if err == nil {
			return nil
		}
		if errors.Is(err, store.ErrFailed) || errors.Is(err, store.ErrState) || errors.Is(err, store.ErrNotFound) {
			// Retrying cannot help: the store failed closed, or the
			// chunk is no longer sending (or gone).
			return fmt.Errorf("record chunk outcome: %w", err)
		}
		delay := backoff.Delay(attempt, s.o.BackoffBase, s.o.BackoffMax, 0, s.o.Jitter())
		log.Error().Str("event", "submit_store_error").Err(err).Int64("retry_in_ms", delay.Milliseconds()).
			Msg("could not record the chunk's outcome; retrying before anything else is sent")
		if ctx.Err() != nil || !s.o.Sleep(ctx, delay) {
			return fmt.Errorf("record chunk outcome (stopped before the store took it): %w", errors.Join(err, ctx.Err()))
		}
	}
}

// record commits an accepted chunk and its submitted batch.
func (s *Submitter) record(a *accepted) error {
	c := a.chunk
	b, err := s.o.Queue.ChunkSubmitted(c.Seq, c.Index, a.batchID, a.at.Add(s.o.ReconcileAfter), a.at)
	if err != nil {
		return err
	}
	s.log.Info().Str("event", "chunk_submitted").Str("submission_id", c.SubmissionID).Int("chunk", c.Index).
		Int("cpfs", c.CPFCount).Str("batch_id", b.ID).Str("state", string(b.State)).Msg("chunk submitted")
	return nil
}
