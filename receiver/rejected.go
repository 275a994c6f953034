package receiver

import (
	"bytes"
	"encoding/hex"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// keepRejected hands a rejected delivery to Options.KeepRejected: the
// first store.MaxRejectedBody bytes of the body (copied: the buffer goes
// back to the pool), the signature header as sent (capped), the verdict.
// The body never reaches a log line.
func (s *Server) keepRejected(c echo.Context, ep endpoint, body []byte, sum [32]byte, reason, remote string) {
	if s.opts.KeepRejected == nil {
		return
	}
	kept := body[:min(len(body), store.MaxRejectedBody)]
	sig := c.Request().Header.Get(signature.Header)
	s.opts.KeepRejected(store.Rejected{
		ReceivedAt: s.opts.Now().UTC(), Path: c.Path(), Product: ep.product, Reason: reason,
		Signature: sig[:min(len(sig), store.MaxRejectedSignature)], RemoteAddr: remote,
		BodyLen: len(body), BodySHA256: hex.EncodeToString(sum[:]), Truncated: len(kept) < len(body),
		Raw: bytes.Clone(kept),
	})
}
