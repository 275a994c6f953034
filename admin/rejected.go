package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
)

// RejectedLog is the ring of the last rejected (401) deliveries (store,
// rejected.go). GetRejected returns store.ErrNotFound for an unknown id.
type RejectedLog interface {
	ListRejected() ([]store.Rejected, error)
	GetRejected(id string) (*store.Rejected, error)
}

var _ RejectedLog = (*store.Store)(nil)

// RejectedView is one rejected delivery. Body is the kept body (at most
// 8 KiB; Truncated when the delivery was longer) as bytes, Base64 in JSON,
// with every CPF-shaped run masked, as is Signature (Masked says some
// were: the bytes are then not those that came, and cannot be verified);
// a payments body is withheld like a quarantined one (it may hold personal
// data; BodyWithheld says so), and an erased one is gone (ErasedBy).
type RejectedView struct {
	ID           uint64    `json:"id"`
	ReceivedAt   time.Time `json:"received_at"`
	Path         string    `json:"path"`
	Product      string    `json:"product"`
	Reason       string    `json:"reason"`
	Signature    string    `json:"signature,omitempty"`
	RemoteAddr   string    `json:"remote_addr,omitempty"`
	BodyLen      int       `json:"body_len"`
	BodySHA256   string    `json:"body_sha256"`
	Truncated    bool      `json:"truncated,omitempty"`
	Body         []byte    `json:"body,omitempty"`
	Masked       bool      `json:"masked,omitempty"`
	BodyWithheld bool      `json:"body_withheld,omitempty"`
	ErasedBy     string    `json:"erased_by,omitempty"`
}

func rejectedView(r store.Rejected, full bool) RejectedView {
	v := RejectedView{ID: r.ID, ReceivedAt: r.ReceivedAt, Path: r.Path, Product: productOf(store.Quarantined{Product: r.Product}),
		Reason: r.Reason, RemoteAddr: r.RemoteAddr, BodyLen: r.BodyLen, BodySHA256: r.BodySHA256, Truncated: r.Truncated,
		ErasedBy: r.ErasedBy, Masked: r.Masked}
	if full {
		v.Signature = r.Signature
		if r.Product == store.ProductPayments {
			v.BodyWithheld = r.Raw != nil
		} else {
			v.Body = r.Raw
		}
	}
	return v
}

func (s *Server) listRejected(c echo.Context) error {
	if s.o.Rejected == nil {
		return fail(c, http.StatusNotFound, "not_found")
	}
	rs, err := s.o.Rejected.ListRejected()
	if err != nil {
		return storeError(c, err)
	}
	out := ListReply[RejectedView]{Items: make([]RejectedView, 0, len(rs))}
	for _, r := range rs {
		out.Items = append(out.Items, rejectedView(r, false))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) showRejected(c echo.Context) error {
	if s.o.Rejected == nil {
		return fail(c, http.StatusNotFound, "not_found")
	}
	r, err := s.o.Rejected.GetRejected(c.Param("id"))
	if err != nil {
		return storeError(c, err)
	}
	return c.JSON(http.StatusOK, rejectedView(*r, true))
}
