package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
)

// PaymentLog is what the payments routes read: the event log's
// metadata and where each event stands with the payment sinks. Errors are
// the store's (store.ErrNotFound for an unknown seq).
type PaymentLog interface {
	PaymentEvents(since uint64, limit int) ([]store.PaymentEvent, error)
	PaymentEvent(seq uint64) (*store.PaymentEvent, error)
	PaymentDeliveries(seq uint64) ([]store.PaymentDelivery, error)
}

var _ PaymentLog = (*store.Store)(nil)

// PaymentEventView is one logged payment event as the admin API shows it:
// metadata only. The body is never served: it holds names, CPFs and
// e-mails.
type PaymentEventView struct {
	Seq        uint64    `json:"seq"`
	ReceivedAt time.Time `json:"received_at"`
	// Event is the X-Service-Event header as received.
	Event         string     `json:"event"`
	Attempt       int        `json:"attempt"`
	DedupKey      string     `json:"dedup_key"`
	BodySHA256    string     `json:"body_sha256"`
	BodyLen       int        `json:"body_len"`
	BodyDroppedAt *time.Time `json:"body_dropped_at,omitempty"`
	ErasedBy      string     `json:"erased_by,omitempty"`
	// Deliveries: show only.
	Deliveries []store.PaymentDelivery `json:"deliveries,omitempty"`
}

func paymentView(e *store.PaymentEvent) PaymentEventView {
	v := PaymentEventView{Seq: e.Seq, ReceivedAt: e.ReceivedAt, Event: e.Event, Attempt: e.Attempt,
		DedupKey: e.DedupKey, BodySHA256: e.BodySHA256, BodyLen: e.BodyLen, ErasedBy: e.ErasedBy}
	if !e.BodyDroppedAt.IsZero() {
		t := e.BodyDroppedAt
		v.BodyDroppedAt = &t
	}
	return v
}

// PaymentPage is the payment log's list reply. The log stays readable
// after payments are turned off (its events are history, and the purger
// still handles them), so the routes answer either way and Enabled says
// whether new events are being taken.
type PaymentPage struct {
	Items []PaymentEventView `json:"items"`
	// NextSince is the since of the next page; absent on the last.
	NextSince uint64 `json:"next_since,omitempty"`
	Enabled   bool   `json:"payments_enabled"`
}

const (
	defaultPaymentLimit = 100
	maxPaymentLimit     = 1000
)

// listPayments is GET /admin/payments/events?since=SEQ&limit=N: the events
// after SEQ (0 = from the first), in log order.
func (s *Server) listPayments(c echo.Context) error {
	if s.o.Payments == nil {
		return fail(c, http.StatusNotFound, "not_found")
	}
	since := uint64(0)
	if v := c.QueryParam("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fail(c, http.StatusBadRequest, "since must be a sequence number (0 or more)")
		}
		since = n
	}
	limit := defaultPaymentLimit
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPaymentLimit {
			return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
		}
		limit = n
	}
	events, err := s.o.Payments.PaymentEvents(since, limit)
	if err != nil {
		return storeError(c, err)
	}
	out := PaymentPage{Items: make([]PaymentEventView, 0, len(events)), Enabled: s.o.PaymentsEnabled}
	for i := range events {
		out.Items = append(out.Items, paymentView(&events[i]))
	}
	if len(events) == limit {
		out.NextSince = events[len(events)-1].Seq
	}
	return c.JSON(http.StatusOK, out)
}

// showPayment is GET /admin/payments/events/:seq, with its deliveries.
func (s *Server) showPayment(c echo.Context) error {
	if s.o.Payments == nil {
		return fail(c, http.StatusNotFound, "not_found")
	}
	seq, err := strconv.ParseUint(c.Param("seq"), 10, 64)
	if err != nil || seq == 0 {
		return fail(c, http.StatusBadRequest, "seq must be a sequence number (1 or more)")
	}
	e, err := s.o.Payments.PaymentEvent(seq)
	if err != nil {
		return storeError(c, err)
	}
	ds, err := s.o.Payments.PaymentDeliveries(seq)
	if err != nil {
		return storeError(c, err)
	}
	v := paymentView(e)
	v.Deliveries = ds
	return c.JSON(http.StatusOK, v)
}
