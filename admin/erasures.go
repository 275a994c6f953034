package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/lifecycle/erasure"
	"github.com/batchhook/batchhook/store"
)

// Erasures erases one person's data (LGPD art. 18); *erasure.Service
// implements it. Erase returns erasure.ErrInvalidCPF (400) for a value
// that is not a valid CPF, else the store's errors.
type Erasures interface {
	Erase(cpf string) (*store.Erasure, error)
	List() ([]store.Erasure, error)
}

var _ Erasures = (*erasure.Service)(nil)

// ErasureView is an erasure as the admin API shows it: what was removed
// and which sinks already had the data. It never holds the CPF; cpf_hmac
// is the keyed hash the record keeps.
type ErasureView struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	CPFHMAC     string     `json:"cpf_hmac"`
	RequestedAt time.Time  `json:"requested_at"`
	DoneAt      *time.Time `json:"done_at,omitempty"`
	// Touched is false when the erasure found nothing to remove (say a
	// second erasure of the same CPF); Previous then names the earlier one.
	Touched  bool                  `json:"touched"`
	Previous string                `json:"previous,omitempty"`
	Batches  []store.ErasedBatch   `json:"batches"`
	Chunks   []store.ErasedChunk   `json:"chunks"`
	Bodies   []store.ErasedBody    `json:"bodies"`
	Payments []store.ErasedPayment `json:"payments,omitempty"`
	// Unrewritten: exports that could not be rewritten and may still hold
	// the CPF (erase again once fixed).
	Unrewritten []string `json:"unrewritten,omitempty"`
}

func erasureView(e *store.Erasure) ErasureView {
	v := ErasureView{ID: e.ID, State: string(e.State), CPFHMAC: e.Hash, RequestedAt: e.RequestedAt, Touched: e.Touched(),
		Previous: e.Previous, Batches: e.Batches, Chunks: e.Chunks, Bodies: e.Bodies, Payments: e.Payments, Unrewritten: e.Unrewritten}
	if !e.DoneAt.IsZero() {
		t := e.DoneAt
		v.DoneAt = &t
	}
	// Empty lists, not null: a client reads "nothing" plainly.
	if v.Batches == nil {
		v.Batches = []store.ErasedBatch{}
	}
	if v.Chunks == nil {
		v.Chunks = []store.ErasedChunk{}
	}
	if v.Bodies == nil {
		v.Bodies = []store.ErasedBody{}
	}
	return v
}

// maxErasureBody bounds a POST /admin/erasures body ({"cpf":"…"}).
const maxErasureBody = 4 << 10

func (s *Server) createErasure(c echo.Context) error {
	if s.o.Erasures == nil {
		return fail(c, http.StatusServiceUnavailable, "erasure is not configured")
	}
	var req struct {
		CPF string `json:"cpf"`
	}
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, maxErasureBody+1))
	if err != nil || len(data) > maxErasureBody || json.Unmarshal(data, &req) != nil || req.CPF == "" {
		return fail(c, http.StatusBadRequest, `want a JSON body {"cpf":"123.456.789-09"} (either form)`)
	}
	e, err := s.o.Erasures.Erase(req.CPF)
	if errors.Is(err, erasure.ErrInvalidCPF) {
		return fail(c, http.StatusBadRequest, err.Error()) // names the problem, never the value
	}
	if err != nil {
		s.o.Logger.Error().Str("event", "erasure_failed").Err(err).Msg("erasure stopped; it stays pending and resumes at the next start or erase")
		return storeError(c, err)
	}
	return c.JSON(http.StatusOK, erasureView(e))
}

func (s *Server) listErasures(c echo.Context) error {
	if s.o.Erasures == nil {
		return fail(c, http.StatusServiceUnavailable, "erasure is not configured")
	}
	all, err := s.o.Erasures.List()
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[ErasureView]{Items: make([]ErasureView, 0, len(all))}
	for i := range all {
		out.Items = append(out.Items, erasureView(&all[i]))
	}
	return c.JSON(http.StatusOK, out)
}
