package admin

import (
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
)

// DeliveryView is one delivery (a batch's export to one sink) as the admin
// API shows it.
type DeliveryView struct {
	BatchID       string     `json:"batch_id"`
	Sink          string     `json:"sink"`
	State         string     `json:"state"`
	Version       int        `json:"version"`
	Attempts      int        `json:"attempts"`
	PartsDone     int        `json:"parts_done"`
	LastError     string     `json:"last_error,omitempty"`
	ErrorKind     string     `json:"error_kind,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	QueuedAt      time.Time  `json:"queued_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

func deliveryViewOf(d *store.Delivery) DeliveryView {
	v := DeliveryView{BatchID: d.BatchID, Sink: d.Sink, State: string(d.State), Version: d.Version, Attempts: d.Attempts,
		PartsDone: d.PartsDone, LastError: d.LastError, ErrorKind: d.ErrorKind, CreatedAt: d.CreatedAt, QueuedAt: d.QueuedAt}
	if d.State == store.DeliveryPending {
		t := d.NextAttemptAt
		v.NextAttemptAt = &t
	}
	if !d.DeliveredAt.IsZero() {
		t := d.DeliveredAt
		v.DeliveredAt = &t
	}
	return v
}

func deliveryViews(ds []store.Delivery) []DeliveryView {
	out := make([]DeliveryView, 0, len(ds))
	for i := range ds {
		out = append(out, deliveryViewOf(&ds[i]))
	}
	return out
}

// redeliver queues a new delivery of an exported batch to one sink: 202,
// 404 for an unknown batch, 409 with the reason when the batch is not
// exported, the sink is not configured or the export was removed.
func (s *Server) redeliver(c echo.Context) error {
	name := c.QueryParam("sink")
	if name == "" {
		return fail(c, http.StatusBadRequest, "sink is required (?sink=NAME)")
	}
	d, err := s.o.Store.Redeliver(c.Param("id"), name, s.o.Now().UTC())
	if err != nil {
		return storeError(c, err)
	}
	s.o.Logger.Info().Str("event", "redeliver_requested").Str("batch_id", d.BatchID).Str("sink", d.Sink).
		Msg("delivery queued again")
	return c.JSON(http.StatusAccepted, deliveryViewOf(d))
}

// listDeliveries pages the deliveries in one state (?state=, required),
// optionally of one sink (?sink=).
func (s *Server) listDeliveries(c echo.Context) error {
	limit, ok := limitParam(c)
	if !ok {
		return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
	}
	state := store.DeliveryState(c.QueryParam("state"))
	if !slices.Contains(store.DeliveryStates, state) {
		return fail(c, http.StatusBadRequest, "state must be pending, delivered or failed")
	}
	ds, next, err := s.o.Store.ListDeliveries(state, c.QueryParam("sink"), limit, c.QueryParam("cursor"))
	if err != nil {
		return storeError(c, err)
	}
	return c.JSON(http.StatusOK, ListReply[DeliveryView]{Items: deliveryViews(ds), NextCursor: next})
}
