package admin

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
)

// BatchView is a batch record as the admin API shows it: everything an
// operator needs to understand one batch, and no result item.
type BatchView struct {
	ID             string     `json:"id"`
	State          string     `json:"state"`
	Status         string     `json:"status"`
	Source         string     `json:"source"`
	TotalRequested *int64     `json:"total_requested"`
	TotalFound     *int64     `json:"total_found"`
	TotalNotFound  *int64     `json:"total_not_found"`
	CompletedAt    *time.Time `json:"completed_at"`
	// ReceivedAt is when the batch.completed (or the poll that found the
	// batch final) was recorded; omitted while none was: a submitted or
	// tracked batch shows submitted_at instead.
	ReceivedAt     time.Time  `json:"received_at,omitzero"`
	Attempt        int        `json:"delivery_attempt"`
	Flags          []string   `json:"flags,omitempty"`
	Pages          int64      `json:"pages"`
	Items          int64      `json:"items"`
	Cursor         string     `json:"cursor,omitempty"`
	CheckpointDone bool       `json:"checkpoint_done"`
	FetchAttempts  int        `json:"fetch_attempts"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	ErrorKind      string     `json:"error_kind,omitempty"`
	ExportPath     string     `json:"export_path,omitempty"`
	Refetch        bool       `json:"refetch,omitempty"`
	UpdatedAt      time.Time  `json:"updated_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	SubmissionID   string     `json:"submission_id,omitempty"`
	CPFCount       int        `json:"cpf_count,omitempty"`
	SubmittedAt    *time.Time `json:"submitted_at,omitempty"`
	PollAttempts   int        `json:"poll_attempts,omitempty"`
	NextPollAt     *time.Time `json:"next_poll_at,omitempty"`
	// Refetches counts the refetches that replaced the export;
	// ExportVersion is the version of the batch's latest export (each
	// refetch or erasure that changed its content made the next); sinks
	// carry it in message ids. ExportRemoved says the export was removed
	// once every sink had it (file not configured).
	Refetches     int  `json:"refetches,omitempty"`
	ExportVersion int  `json:"export_version"`
	ExportRemoved bool `json:"export_removed,omitempty"`
	// Tombstone is what the purger kept of a purged batch (or of one
	// whose record it reduced): dates, the manifest's sha256 and items.
	Tombstone *store.Tombstone `json:"tombstone,omitempty"`
	// Deliveries are the batch's deliveries to the sinks (show only).
	Deliveries []DeliveryView `json:"deliveries,omitempty"`
}

func viewOf(b *store.Batch) BatchView {
	n := b.Notification
	v := BatchView{
		ID: b.ID, State: string(b.State), Status: n.Status, Source: n.Source,
		TotalRequested: n.TotalRequested, TotalFound: n.TotalFound, TotalNotFound: n.TotalNotFound,
		CompletedAt: n.CompletedAt, ReceivedAt: n.ReceivedAt, Attempt: n.Attempt, Flags: n.Flags,
		Pages: b.Checkpoint.Pages, Items: b.Checkpoint.Items, Cursor: b.Checkpoint.Cursor,
		CheckpointDone: b.Checkpoint.Done, FetchAttempts: b.FetchAttempts, LastError: b.LastError,
		ErrorKind: b.ErrorKind, ExportPath: b.ExportPath, Refetch: b.Refetch, UpdatedAt: b.UpdatedAt,
	}
	if b.State == store.StateQueued && !b.NextAttemptAt.IsZero() {
		t := b.NextAttemptAt
		v.NextAttemptAt = &t
	}
	if !b.FinishedAt.IsZero() {
		t := b.FinishedAt
		v.FinishedAt = &t
	}
	v.SubmissionID, v.CPFCount, v.PollAttempts = b.SubmissionID, b.CPFCount, b.PollAttempts
	v.Refetches, v.ExportVersion, v.ExportRemoved, v.Tombstone = b.Refetches, b.Version(), b.ExportRemoved, b.Tombstone
	if !b.SubmittedAt.IsZero() {
		t := b.SubmittedAt
		v.SubmittedAt = &t
	}
	if !b.NextPollAt.IsZero() {
		t := b.NextPollAt
		v.NextPollAt = &t
	}
	return v
}

// ListReply is a page of a list route: its items and, when more follow,
// the cursor of the next page.
type ListReply[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// limitParam reads ?limit= (default 50, 1 to 1000).
func limitParam(c echo.Context) (int, bool) {
	v := c.QueryParam("limit")
	if v == "" {
		return 50, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= 1000
}

func (s *Server) listBatches(c echo.Context) error {
	limit, ok := limitParam(c)
	if !ok {
		return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
	}
	state := store.State(c.QueryParam("state"))
	if state != "" && !slices.Contains(store.States, state) {
		return fail(c, http.StatusBadRequest, "state must be submitted, tracked, queued, fetching, exported, abandoned or purged")
	}
	batches, next, err := s.o.Store.List(state, limit, c.QueryParam("cursor"))
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[BatchView]{Items: make([]BatchView, 0, len(batches)), NextCursor: next}
	for i := range batches {
		out.Items = append(out.Items, viewOf(&batches[i]))
	}
	return c.JSON(http.StatusOK, out)
}

// showBatch accepts a unique prefix of the id as well (read-only: the
// actions on a batch take its whole id).
func (s *Server) showBatch(c echo.Context) error {
	b, err := s.o.Store.FindBatch(c.Param("id"))
	if err != nil {
		return storeError(c, err)
	}
	ds, err := s.o.Store.Deliveries(b.ID)
	if err != nil {
		return storeError(c, err)
	}
	v := viewOf(b)
	v.Deliveries = deliveryViews(ds)
	return c.JSON(http.StatusOK, v)
}

func (s *Server) refetch(c echo.Context) error {
	b, err := s.o.Store.Refetch(c.Param("id"), s.o.Retention, s.o.Now().UTC())
	if err != nil {
		return storeError(c, err)
	}
	s.o.Logger.Info().Str("event", "refetch_requested").Str("batch_id", b.ID).Msg("batch queued for refetch")
	return c.JSON(http.StatusAccepted, viewOf(b))
}

// retryNow makes a queued batch that waits out a backoff due now; the
// reply is the batch as it now is (unchanged when it was already due).
func (s *Server) retryNow(c echo.Context) error {
	b, err := s.o.Store.RetryNow(c.Param("id"), s.o.Now().UTC())
	if err != nil {
		return storeError(c, err)
	}
	s.o.Logger.Info().Str("event", "retry_requested").Str("batch_id", b.ID).Msg("batch due for a fetch now")
	return c.JSON(http.StatusAccepted, viewOf(b))
}

// QuarantineView is a quarantine entry; Body is the signed body as kept:
// every CPF-shaped run masked (Masked says some were), never result
// items. ID is the SHA-256 of the body as it came and BodyLen its length.
type QuarantineView struct {
	ID         string    `json:"id"`
	Reason     string    `json:"reason"`
	Attempt    int       `json:"delivery_attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Body       string    `json:"body,omitempty"`
	BodyLen    int       `json:"body_len,omitempty"`
	Masked     bool      `json:"masked,omitempty"`
	// ErasedBy: the body held a CPF that was erased; only its id (the
	// body's SHA-256) is left.
	ErasedBy string `json:"erased_by,omitempty"`
	// Product is the webhook that received it: batch or payments.
	Product string `json:"product"`
	// BatchID is the body's batch_id when it could be read safely.
	BatchID string `json:"batch_id,omitempty"`
}

// productOf names an entry's product; entries of the batch webhook (and
// those older than payments) have none stored.
func productOf(q store.Quarantined) string {
	if q.Product == "" {
		return "batch"
	}
	return q.Product
}

func (s *Server) listQuarantine(c echo.Context) error {
	limit, ok := limitParam(c)
	if !ok {
		return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
	}
	entries, next, err := s.o.Store.ListQuarantined(limit, c.QueryParam("cursor"))
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[QuarantineView]{Items: make([]QuarantineView, 0, len(entries)), NextCursor: next}
	for _, q := range entries {
		out.Items = append(out.Items, QuarantineView{ID: q.ID, Reason: q.Reason, Attempt: q.Attempt, ReceivedAt: q.ReceivedAt, Product: productOf(q), BatchID: q.BatchID})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) showQuarantine(c echo.Context) error {
	q, err := s.findQuarantined(c.Param("id"))
	if err != nil {
		return storeError(c, err)
	}
	v := QuarantineView{ID: q.ID, Reason: q.Reason, Attempt: q.Attempt, ReceivedAt: q.ReceivedAt, Body: string(q.Raw), ErasedBy: q.ErasedBy,
		Product: productOf(*q), BatchID: q.BatchID, BodyLen: q.BodyLen, Masked: q.Masked}
	if q.Product == store.ProductPayments {
		// A payments body may hold names, CPFs and e-mails, which no
		// route but the backup serves; its id is its SHA-256.
		v.Body = ""
	}
	return c.JSON(http.StatusOK, v)
}
