package lookupsim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// submitWindow is the rolling window of the submissions limit.
const submitWindow = time.Minute

// batch is one submission. Everything but the fields set at finalization
// is fixed at submission; items and notification never change once set,
// so they may be read outside the lock after status leaves processing.
type batch struct {
	id         string
	seq        int
	cpfs       []string  // normalized, unique, in submission order
	finalizeAt time.Time // real time, for Retry-After on max_in_flight
	timer      *time.Timer
	final      chan struct{} // closed when status becomes final

	status       string
	items        []json.RawMessage
	totals       counters
	completedAt  time.Time // Options.Now, UTC, whole seconds
	notification []byte
}

// Submit is the in-process twin of POST /api/v1/batches: the same
// validation, deduplication and limits. It returns the new batch id; its
// errors match ErrInvalid, ErrRateLimited (a *LimitError) or ErrClosed.
func (s *Server) Submit(cpfs []string) (string, error) {
	b, err := s.submit(cpfs)
	if err != nil {
		return "", err
	}
	return b.id, nil
}

func (s *Server) submit(raw []string) (*batch, error) {
	cpfs, err := normalizeCPFs(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := s.opts.Now()
	s.pruneLocked(now)
	if err := s.checkLimitsLocked(now); err != nil {
		s.stats.RateLimited++
		return nil, err
	}
	b := &batch{
		id:         s.newIDLocked(),
		seq:        s.seq,
		cpfs:       cpfs,
		finalizeAt: time.Now().Add(s.opts.ProcessingDelay),
		final:      make(chan struct{}),
		status:     StatusProcessing,
	}
	s.seq++
	s.window = append(s.window, now)
	s.inFlight++
	s.stats.Submitted++
	s.batches[b.id] = b
	b.timer = time.AfterFunc(s.opts.ProcessingDelay, func() { s.finalize(b) })
	s.opts.Logf("lookupsim: batch %s submitted: %d cpfs", b.id, len(cpfs))
	return b, nil
}

// pruneLocked forgets submissions older than the window and batches past
// their retention, so a long-running simulator does not grow without end.
func (s *Server) pruneLocked(now time.Time) {
	keep := s.window[:0]
	for _, t := range s.window {
		if now.Sub(t) < submitWindow {
			keep = append(keep, t)
		}
	}
	s.window = keep
	for id, b := range s.batches {
		if b.status != StatusProcessing && s.expiredLocked(b, now) {
			delete(s.batches, id)
		}
	}
}

// expiredLocked says whether a final batch's result is past retention.
func (s *Server) expiredLocked(b *batch, now time.Time) bool {
	return now.Sub(b.completedAt) > s.opts.Retention
}

// checkLimitsLocked applies the limits of docs/provider-api.md §8.
func (s *Server) checkLimitsLocked(now time.Time) error {
	if n := s.opts.SubmitPerMinute; n != Unlimited && len(s.window) >= n {
		wait := s.window[len(s.window)-n].Add(submitWindow).Sub(now)
		return &LimitError{Limit: "submit_per_minute", RetryAfter: atLeastASecond(wait)}
	}
	if n := s.opts.MaxInFlight; n != Unlimited && s.inFlight >= n {
		var first time.Time
		for _, b := range s.batches {
			if b.status == StatusProcessing && (first.IsZero() || b.finalizeAt.Before(first)) {
				first = b.finalizeAt
			}
		}
		return &LimitError{Limit: "max_in_flight", RetryAfter: atLeastASecond(time.Until(first))}
	}
	return nil
}

// atLeastASecond rounds d up to whole seconds, minimum one, as Retry-After
// can only say.
func atLeastASecond(d time.Duration) time.Duration {
	d = (d + time.Second - 1).Truncate(time.Second)
	return max(d, time.Second)
}

// newIDLocked returns "b_" and 20 random hex digits, unique in this Server
// and, being random, across runs.
func (s *Server) newIDLocked() string {
	for {
		var r [10]byte
		_, _ = rand.Read(r[:]) // never fails (crypto/rand contract)
		id := "b_" + hex.EncodeToString(r[:])
		if _, taken := s.batches[id]; !taken {
			return id
		}
	}
}

// finalize closes a batch: it picks the status, renders the items and the
// notification, and starts the delivery. It runs on the batch's timer.
func (s *Server) finalize(b *batch) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	status := s.opts.Outcome(b.seq, append([]string(nil), b.cpfs...))
	if !IsFinalStatus(status) {
		s.opts.Logf("lookupsim: batch %s: Outcome gave an unknown status, serving failed", b.id)
		status = StatusFailed
	}
	items, totals, err := buildItems(b.cpfs, status)
	if err != nil {
		s.opts.Logf("lookupsim: batch %s: %v; serving failed", b.id, err)
		status = StatusFailed
		items, totals, _ = buildItems(b.cpfs, status)
	}
	completedAt := s.opts.Now().UTC().Truncate(time.Second)
	note, err := json.Marshal(notification{
		Event:          "batch.completed",
		BatchID:        b.id,
		Status:         status,
		TotalRequested: totals.requested,
		TotalFound:     totals.found,
		TotalNotFound:  totals.notFound,
		CompletedAt:    completedAt.Format("2006-01-02T15:04:05Z"),
	})
	if err != nil { // cannot happen: plain strings and ints
		panic(fmt.Sprintf("lookupsim: encode notification: %v", err))
	}

	s.mu.Lock()
	b.status, b.items, b.totals = status, items, totals
	b.completedAt, b.notification = completedAt, note
	s.inFlight--
	deliver := s.opts.WebhookURL != "" && !s.faults.DropNotifications && !s.closed
	if deliver {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	close(b.final)

	s.opts.Logf("lookupsim: batch %s final: status=%s requested=%d found=%d not_found=%d",
		b.id, status, totals.requested, totals.found, totals.notFound)
	if deliver {
		go s.deliver(s.batchWebhook(b.id, note))
	} else if s.opts.WebhookURL != "" {
		s.opts.Logf("lookupsim: batch %s: notification dropped (fault)", b.id)
	}
}

// notification is the webhook body, members in the order of docs/provider-api.md §2.1.
type notification struct {
	Event          string `json:"event"`
	BatchID        string `json:"batch_id"`
	Status         string `json:"status"`
	TotalRequested int    `json:"total_requested"`
	TotalFound     int    `json:"total_found"`
	TotalNotFound  int    `json:"total_not_found"`
	CompletedAt    string `json:"completed_at"`
}
