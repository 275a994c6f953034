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

// Webhook headers beyond the signature (docs/provider-api.md §2.2).
const (
	headerEvent   = "X-Service-Event"
	headerAttempt = "X-Service-Attempt"
	eventName     = "batch.completed"
)

// webhook is one notification to send until acknowledged: the batch's
// batch.completed or a payment event. Every attempt carries the same body
// bytes and signature; only X-Service-Attempt moves.
type webhook struct {
	label      string // for log lines: "batch b_…" or "transaction <uuid>"; never personal data
	url        string
	event      string // X-Service-Event
	body       []byte
	sig        string
	payment    bool // counted in the payment stats
	duplicates int  // deliveries again after the first acknowledged one (a fault)
}

// batchWebhook is a batch's batch.completed notification.
func (s *Server) batchWebhook(batchID string, body []byte) webhook {
	return webhook{
		label: "batch " + batchID, url: s.opts.WebhookURL, event: eventName, body: body,
		sig: signature.Sign(s.opts.SigningSecret, body), duplicates: s.Faults().DuplicateDeliveries,
	}
}

// deliver sends one webhook until a 2xx reply or MaxAttempts failures,
// then the duplicates the faults ask for. It stops when the Server closes.
// The caller has done s.wg.Add(1).
func (s *Server) deliver(h webhook) {
	defer s.wg.Done()
	attempt := 0
	for {
		attempt++
		err := s.sendOnce(h, attempt)
		if err == nil {
			break
		}
		if s.ctx.Err() != nil {
			return
		}
		s.opts.Logf("lookupsim: %s: webhook attempt %d failed: %v", h.label, attempt, err)
		if attempt >= s.opts.MaxAttempts {
			s.mu.Lock()
			if h.payment {
				s.stats.PaymentDeliveriesGivenUp++
			} else {
				s.stats.DeliveriesGivenUp++
			}
			s.mu.Unlock()
			s.opts.Logf("lookupsim: %s: webhook given up after %d attempts", h.label, attempt)
			return
		}
		if !s.sleep(Backoff(s.opts.RetryBackoff, attempt)) {
			return
		}
	}
	s.opts.Logf("lookupsim: %s: webhook acknowledged on attempt %d", h.label, attempt)
	for i := 0; i < h.duplicates && s.ctx.Err() == nil; i++ {
		attempt++
		if err := s.sendOnce(h, attempt); err != nil && s.ctx.Err() == nil {
			s.opts.Logf("lookupsim: %s: duplicate delivery %d failed: %v", h.label, attempt, err)
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
func (s *Server) sendOnce(h webhook, attempt int) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(h.body))
	if err != nil {
		return s.countAttempt(h.payment, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, h.sig)
	req.Header.Set(headerEvent, h.event)
	req.Header.Set(headerAttempt, strconv.Itoa(attempt))
	resp, err := s.client.Do(req)
	if err != nil {
		// The URL can carry credentials; say what failed, not where.
		if ctx.Err() == context.DeadlineExceeded {
			return s.countAttempt(h.payment, fmt.Errorf("timed out after %s", s.opts.DeliveryTimeout))
		}
		return s.countAttempt(h.payment, fmt.Errorf("transport error: %w", unwrapURLError(err)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return s.countAttempt(h.payment, fmt.Errorf("receiver answered %d", resp.StatusCode))
	}
	return s.countAttempt(h.payment, nil)
}

// countAttempt records one attempt's outcome in Stats and returns err.
func (s *Server) countAttempt(payment bool, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if payment {
		s.stats.PaymentDeliveries++
		if err != nil {
			s.stats.PaymentDeliveryFailures++
		} else {
			s.stats.PaymentDeliveriesAcked++
		}
		return err
	}
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
