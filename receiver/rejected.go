package receiver

import (
	"bytes"
	"encoding/hex"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// keepRejected hands a rejected delivery to Options.KeepRejected: the
// first store.MaxRejectedBody bytes of the body (copied: the buffer goes
// back to the pool), the signature header as sent (capped), the verdict.
// The kept body and signature have every CPF-shaped run masked
// (cpf.ScrubBytes; Masked says so): they are a stranger's bytes, read back
// by operators for the retention period. BodyLen and BodySHA256 are the
// whole original's. The body never reaches a log line.
func (s *Server) keepRejected(c echo.Context, ep endpoint, body []byte, sum [32]byte, reason, remote string) {
	if s.opts.KeepRejected == nil {
		return
	}
	kept := body[:min(len(body), store.MaxRejectedBody)]
	masked := cpf.ScrubBytes(kept)
	sig := c.Request().Header.Get(signature.Header)
	sig = sig[:min(len(sig), store.MaxRejectedSignature)]
	maskedSig := cpf.Scrub(sig)
	s.opts.KeepRejected(store.Rejected{
		ReceivedAt: s.opts.Now().UTC(), Path: c.Path(), Product: ep.product, Reason: reason,
		Signature: maskedSig, RemoteAddr: remote,
		BodyLen: len(body), BodySHA256: hex.EncodeToString(sum[:]), Truncated: len(kept) < len(body),
		Raw: bytes.Clone(masked), Masked: !bytes.Equal(masked, kept) || maskedSig != sig,
	})
}
