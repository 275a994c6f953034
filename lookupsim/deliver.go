package lookupsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
)

// Webhook headers beyond the signature (document section 2.2).
const (
	headerEvent   = "X-Service-Event"
	headerAttempt = "X-Service-Attempt"
	eventName     = "batch.completed"
)

// deliver sends one batch's notification until a 2xx reply or MaxAttempts
// failures, then the duplicates the DuplicateDeliveries fault asks for.
// Every attempt carries the same body bytes; only X-Service-Attempt moves.
// It stops when the Server closes.
func (s *Server) deliver(batchID string, body []byte) {
	defer s.wg.Done()
	sig := signature.Sign(s.opts.SigningSecret, body)
	attempt := 0
	for {
		attempt++
		err := s.sendOnce(batchID, body, sig, attempt)
		if err == nil {
			break
		}
		if s.ctx.Err() != nil {
			return
		}
		s.opts.Logf("lookupsim: batch %s: webhook attempt %d failed: %v", batchID, attempt, err)
		if attempt >= s.opts.MaxAttempts {
			s.mu.Lock()
			s.stats.DeliveriesGivenUp++
			s.mu.Unlock()
			s.opts.Logf("lookupsim: batch %s: webhook given up after %d attempts", batchID, attempt)
			return
		}
		if !s.sleep(Backoff(s.opts.RetryBackoff, attempt)) {
			return
		}
	}
	s.opts.Logf("lookupsim: batch %s: webhook acknowledged on attempt %d", batchID, attempt)
	dups := s.Faults().DuplicateDeliveries
	for i := 0; i < dups && s.ctx.Err() == nil; i++ {
		attempt++
		if err := s.sendOnce(batchID, body, sig, attempt); err != nil && s.ctx.Err() == nil {
			s.opts.Logf("lookupsim: batch %s: duplicate delivery %d failed: %v", batchID, attempt, err)
		}
	}
}

// Backoff is the wait after the attempt-th failed delivery: base, doubled
// for each further failure, capped at one minute. It is a pure function so
// the retry spacing can be tested without waiting.
func Backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// sleep waits d, or until the Server closes (then it returns false).
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// sendOnce makes one delivery attempt. A non-2xx reply, a timeout or a
// transport error (a dropped connection) is an error.
func (s *Server) sendOnce(batchID string, body []byte, sig string, attempt int) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return s.countAttempt(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, sig)
	req.Header.Set(headerEvent, eventName)
	req.Header.Set(headerAttempt, strconv.Itoa(attempt))
	resp, err := s.client.Do(req)
	if err != nil {
		// The URL can carry credentials; say what failed, not where.
		if ctx.Err() == context.DeadlineExceeded {
			return s.countAttempt(fmt.Errorf("timed out after %s", s.opts.DeliveryTimeout))
		}
		return s.countAttempt(fmt.Errorf("transport error: %w", unwrapURLError(err)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return s.countAttempt(fmt.Errorf("receiver answered %d", resp.StatusCode))
	}
	return s.countAttempt(nil)
}

// countAttempt records one attempt's outcome in Stats and returns err.
func (s *Server) countAttempt(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Deliveries++
	if err != nil {
		s.stats.DeliveryFailures++
	} else {
		s.stats.DeliveriesAcked++
	}
	return err
}

// unwrapURLError drops the URL a transport error quotes.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
