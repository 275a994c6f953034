package admin

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// Submissions is the submit side the admin API drives; *submit.Service
// implements it.
type Submissions interface {
	Submit(r io.Reader, o submit.IntakeOptions, strict bool) (*submit.Receipt, error)
	Get(id string) (*store.Submission, []store.Chunk, error)
	Track(id string) (*store.Batch, bool, error)
	Resubmit(batchID string) (*submit.Receipt, error)
	Resend(submissionID string, index int) (*store.Chunk, error)
}

var _ Submissions = (*submit.Service)(nil)

// ReceiptView answers an intake: what was read, what is invalid (masked,
// with line numbers) and the submission that holds the rest.
type ReceiptView struct {
	SubmissionID string           `json:"submission_id,omitempty"`
	ResubmitOf   string           `json:"resubmit_of,omitempty"`
	Lines        int              `json:"lines"`
	Valid        int              `json:"valid"`
	Duplicates   int              `json:"duplicates"`
	Invalid      []submit.Invalid `json:"invalid"`
	Chunks       int              `json:"chunks"`
	Error        string           `json:"error,omitempty"`
}

func receiptView(rc *submit.Receipt) ReceiptView {
	in := rc.Intake
	return ReceiptView{SubmissionID: rc.Submission.ID, ResubmitOf: rc.Submission.ResubmitOf, Lines: in.Lines,
		Valid: in.Valid, Duplicates: in.Duplicates, Invalid: in.Invalid, Chunks: rc.Submission.Chunks}
}

// ChunkView is one chunk of a submission, with its batch's current state.
type ChunkView struct {
	SubmissionID string     `json:"submission_id"`
	Index        int        `json:"index"`
	State        string     `json:"state"`
	CPFs         int        `json:"cpfs"`
	BatchID      string     `json:"batch_id,omitempty"`
	BatchState   string     `json:"batch_state,omitempty"`
	Attempts     int        `json:"attempts"`
	LastError    string     `json:"last_error,omitempty"`
	SentAt       *time.Time `json:"sent_at,omitempty"`
	// CPFsPurged says the purger deleted the CPFs of this failed or
	// submit_unknown chunk after RECORD_RETENTION: its counts stay, but it
	// can no longer be resent.
	CPFsPurged bool `json:"cpfs_purged,omitempty"`
}

// SubmissionView is a submission with its chunks.
type SubmissionView struct {
	ID         string      `json:"id"`
	ResubmitOf string      `json:"resubmit_of,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	Lines      int         `json:"lines"`
	Valid      int         `json:"valid"`
	Duplicates int         `json:"duplicates"`
	Invalid    int         `json:"invalid"`
	Chunks     []ChunkView `json:"chunks"`
	// Waiting says why chunks of this submission still wait, while some do.
	Waiting *WaitingView `json:"waiting,omitempty"`
}

// WaitingView is why a submission's chunks wait: the submitter's Wait (with
// the last attempt the provider did not accept, its kind and a hint), the
// chunks waiting in the whole queue (this submission's and those ahead of
// or behind it), and when the last of them should go out.
//
// EstimatedDoneAt is only ever a time after the reply's: when none can be
// given, Estimate says why instead: EstimateUnknown (the in-flight cap,
// whose pace the provider sets, or a refused API key, which waits for an
// operator) or EstimateOverdue (by the limits they would all be out by
// now, yet some still wait: one is being sent, or a retry is due).
type WaitingView struct {
	submit.Wait
	QueuedChunks    int        `json:"queued_chunks"`
	EstimatedDoneAt *time.Time `json:"estimated_done_at,omitempty"`
	Estimate        string     `json:"estimate,omitempty"`
}

// The values of WaitingView.Estimate.
const (
	EstimateUnknown = "unknown"
	EstimateOverdue = "overdue"
)

// waitingView is nil unless some chunk of the submission still waits (or
// is being sent: between two attempts after a refused key, the reason must
// not blink out).
func (s *Server) waitingView(chunks []store.Chunk) *WaitingView {
	pending := func(c store.Chunk) bool { return c.State == store.ChunkWaiting || c.State == store.ChunkSending }
	if !slices.ContainsFunc(chunks, pending) {
		return nil
	}
	return s.queueWaiting()
}

// queueWaiting is what holds the queue back now; nil without a submitter
// or when the chunk counts cannot be read.
func (s *Server) queueWaiting() *WaitingView {
	if s.o.SubmitWait == nil {
		return nil
	}
	counts, err := s.o.Store.ChunkCounts()
	if err != nil {
		return nil
	}
	v := &WaitingView{Wait: s.o.SubmitWait(), QueuedChunks: counts[store.ChunkWaiting] + counts[store.ChunkSending]}
	now := s.o.Now()
	switch at, ok := submit.EstimateDone(v.Wait, v.QueuedChunks, now); {
	case !ok:
		v.Estimate = EstimateUnknown
	case at.After(now):
		at = at.UTC()
		v.EstimatedDoneAt = &at
	default:
		v.Estimate = EstimateOverdue
	}
	return v
}

func (s *Server) chunkView(ch store.Chunk) ChunkView {
	v := ChunkView{SubmissionID: ch.SubmissionID, Index: ch.Index, State: string(ch.State), CPFs: ch.CPFCount,
		BatchID: ch.BatchID, Attempts: ch.Attempts, LastError: ch.LastError, CPFsPurged: ch.CPFsPurged}
	if !ch.SentAt.IsZero() {
		t := ch.SentAt
		v.SentAt = &t
	}
	if ch.BatchID != "" {
		if b, err := s.o.Store.Get(ch.BatchID); err == nil {
			v.BatchState = string(b.State)
		}
	}
	return v
}

// createSubmission is POST /admin/submissions. The body is text/plain (one
// CPF a line), text/csv (?column= names the CPF column) or
// application/json ({"cpfs":[...]}); ?strict=true stores nothing when any
// line is invalid.
func (s *Server) createSubmission(c echo.Context) error {
	ct, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	o := submit.IntakeOptions{Column: c.QueryParam("column")}
	switch ct {
	case "text/plain", "":
		o.Format = submit.FormatLines
	case "text/csv":
		o.Format = submit.FormatCSV
		if o.Column == "" {
			return fail(c, http.StatusBadRequest, "text/csv needs ?column= naming the CPF column")
		}
	case "application/json":
		o.Format = submit.FormatJSON
	default:
		return fail(c, http.StatusUnsupportedMediaType, "Content-Type must be text/plain, text/csv or application/json")
	}
	body := http.MaxBytesReader(c.Response(), c.Request().Body, s.o.MaxSubmissionBytes)
	rc, err := s.o.Submissions.Submit(body, o, c.QueryParam("strict") == "true")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fail(c, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("body larger than %d bytes (BATCHHOOK_MAX_SUBMISSION_BYTES); split the file", s.o.MaxSubmissionBytes))
	case errors.Is(err, submit.ErrBadBody):
		return fail(c, http.StatusBadRequest, err.Error())
	case errors.Is(err, submit.ErrNothingValid):
		v := receiptView(rc)
		v.Error = err.Error()
		return c.JSON(http.StatusUnprocessableEntity, v)
	case err != nil:
		return storeError(c, err)
	}
	return c.JSON(http.StatusAccepted, receiptView(rc))
}

func (s *Server) showSubmission(c echo.Context) error {
	sub, chunks, err := s.o.Submissions.Get(c.Param("id"))
	if err != nil {
		return storeError(c, err)
	}
	v := SubmissionView{ID: sub.ID, ResubmitOf: sub.ResubmitOf, CreatedAt: sub.CreatedAt, Lines: sub.Lines, Valid: sub.Valid,
		Duplicates: sub.Duplicates, Invalid: sub.Invalid, Chunks: make([]ChunkView, 0, len(chunks))}
	for _, ch := range chunks {
		v.Chunks = append(v.Chunks, s.chunkView(ch))
	}
	v.Waiting = s.waitingView(chunks)
	return c.JSON(http.StatusOK, v)
}

// SubmissionSummaryView is a submission as GET /admin/submissions lists it:
// its counts, its chunks by state, and a State that sums them up.
type SubmissionSummaryView struct {
	ID         string         `json:"id"`
	ResubmitOf string         `json:"resubmit_of,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
	Valid      int            `json:"valid"`
	Chunks     int            `json:"chunks"`
	Submitted  int            `json:"submitted"`
	ChunkState map[string]int `json:"chunk_states"`
	// State is SubmissionWaiting, SubmissionSubmitted or
	// SubmissionIncomplete.
	State string `json:"state"`
	// Waiting is why its chunks wait, as in GET /admin/submissions/{id}.
	Waiting *WaitingView `json:"waiting,omitempty"`
}

// The values of SubmissionSummaryView.State.
const (
	// SubmissionWaiting: some chunk waits or is being sent.
	SubmissionWaiting = "waiting"
	// SubmissionSubmitted: every chunk became a batch.
	SubmissionSubmitted = "submitted"
	// SubmissionIncomplete: none waits, and some ended failed or
	// submit_unknown: an operator decides about them.
	SubmissionIncomplete = "incomplete"
)

// listSubmissions is GET /admin/submissions?limit=&cursor=: submissions,
// newest first, paged like the other lists.
func (s *Server) listSubmissions(c echo.Context) error {
	limit, ok := limitParam(c)
	if !ok {
		return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
	}
	subs, next, err := s.o.Store.ListSubmissions(limit, c.QueryParam("cursor"))
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[SubmissionSummaryView]{Items: make([]SubmissionSummaryView, 0, len(subs)), NextCursor: next}
	var waiting *WaitingView // the queue's, the same for every waiting submission
	for _, sub := range subs {
		v := SubmissionSummaryView{ID: sub.ID, ResubmitOf: sub.ResubmitOf, CreatedAt: sub.CreatedAt, Valid: sub.Valid,
			Chunks: sub.Chunks, Submitted: sub.ChunkStates[store.ChunkSubmitted], ChunkState: map[string]int{}}
		for st, n := range sub.ChunkStates {
			v.ChunkState[string(st)] = n
		}
		switch {
		case sub.ChunkStates[store.ChunkWaiting]+sub.ChunkStates[store.ChunkSending] > 0:
			v.State = SubmissionWaiting
			if waiting == nil {
				waiting = s.queueWaiting()
			}
			v.Waiting = waiting
		case v.Submitted == sub.Chunks:
			v.State = SubmissionSubmitted
		default:
			v.State = SubmissionIncomplete
		}
		out.Items = append(out.Items, v)
	}
	return c.JSON(http.StatusOK, out)
}

// listChunks is GET /admin/chunks?state=submit_unknown (the default): the
// chunks an operator must decide about.
func (s *Server) listChunks(c echo.Context) error {
	state := store.ChunkState(c.QueryParam("state"))
	if state == "" {
		state = store.ChunkUnknown
	}
	if !slices.Contains(store.ChunkStates, state) {
		return fail(c, http.StatusBadRequest, "state must be waiting, sending, submitted, submit_unknown or failed")
	}
	limit, ok := limitParam(c)
	if !ok {
		return fail(c, http.StatusBadRequest, "limit must be 1 to 1000")
	}
	chunks, err := s.o.Store.ChunksIn(state, limit)
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[ChunkView]{Items: make([]ChunkView, 0, len(chunks))}
	for _, ch := range chunks {
		out.Items = append(out.Items, s.chunkView(ch))
	}
	return c.JSON(http.StatusOK, out)
}

// track is POST /admin/batches/:id/track: 201 when batchhook starts
// tracking the batch, 200 when it already knew it.
func (s *Server) track(c echo.Context) error {
	b, created, err := s.o.Submissions.Track(c.Param("id"))
	if errors.Is(err, submit.ErrBadBatchID) {
		return fail(c, http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return storeError(c, err)
	}
	if created {
		return c.JSON(http.StatusCreated, viewOf(b))
	}
	return c.JSON(http.StatusOK, viewOf(b))
}

// resend is POST /admin/submissions/:id/chunks/:index/resend: a failed or
// submit_unknown chunk goes back in the queue (409 in any other state).
func (s *Server) resend(c echo.Context) error {
	index, err := strconv.Atoi(c.Param("index"))
	if err != nil || index < 0 {
		return fail(c, http.StatusBadRequest, "chunk index must be a non-negative integer")
	}
	ch, err := s.o.Submissions.Resend(c.Param("id"), index)
	if err != nil {
		return storeError(c, err)
	}
	return c.JSON(http.StatusAccepted, s.chunkView(*ch))
}

func (s *Server) resubmit(c echo.Context) error {
	rc, err := s.o.Submissions.Resubmit(c.Param("id"))
	if errors.Is(err, submit.ErrRefused) {
		return fail(c, http.StatusConflict, err.Error())
	}
	if err != nil {
		return storeError(c, err)
	}
	return c.JSON(http.StatusAccepted, receiptView(rc))
}
