package receiver

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
)

// TestReqLogWritesWhatAContextDid: a line written through reqLog is byte
// for byte the line the handler wrote through a zerolog context built with
// With() for every request (the fields, their order, their values).
func TestReqLogWritesWhatAContextDid(t *testing.T) {
	for _, l := range []reqLog{
		{reqID: "0a1b2c3d4e5f6071", remote: "192.0.2.7", attempt: 3},
		{reqID: "r", remote: "198.51.100.1", proxy: "127.0.0.1", attempt: 0, batchID: "b-1"},
		{reqID: "r", remote: "198.51.100.1", product: "payments", attempt: 2, payment: true, bodySHA: "abc", event: ""},
		{reqID: "r", remote: "198.51.100.1", proxy: "10.0.0.1", product: "payments", attempt: 1, payment: true, bodySHA: "abc", event: "payment.paid"},
		{reqID: "r", remote: "198.51.100.1", proxy: "10.0.0.1", product: "p", attempt: 1, batchID: "b-2"}, // every field
	} {
		var got, want bytes.Buffer
		base := func(w *bytes.Buffer) zerolog.Logger {
			return zerolog.New(w).With().Str("component", "receiver").Logger()
		}
		l.base = base(&got)
		l.Warn().Str("event", "webhook_accepted").Msg("m")

		lc := base(&want).With().Str("request_id", l.reqID).Str("remote_addr", l.remote).Int("delivery_attempt", l.attempt)
		if l.proxy != "" {
			lc = lc.Str("proxy_addr", l.proxy)
		}
		if l.product != "" {
			lc = lc.Str("product", l.product)
		}
		if l.batchID != "" {
			lc = lc.Str("batch_id", l.batchID)
		}
		if l.payment {
			lc = lc.Str("body_sha256", l.bodySHA).Str("webhook_event", l.event)
		}
		old := lc.Logger()
		old.Warn().Str("event", "webhook_accepted").Msg("m")
		if got.String() != want.String() {
			t.Errorf("reqLog wrote %s, the context %s", got.String(), want.String())
		}
	}
}

// TestReqLogAllocatesNothingWhenDisabled: at LOG_LEVEL=warn the ack's
// info lines cost no allocation.
func TestReqLogAllocatesNothingWhenDisabled(t *testing.T) {
	var out bytes.Buffer
	l := reqLog{base: zerolog.New(&out).Level(zerolog.WarnLevel), reqID: "r", remote: "192.0.2.7", batchID: "b-1", attempt: 1}
	allocs := testing.AllocsPerRun(100, func() {
		l.Info().Str("event", "webhook_duplicate").Msg("batch already recorded; nothing to do")
	})
	if allocs != 0 || out.Len() != 0 {
		t.Errorf("a disabled line allocated %v times and wrote %q", allocs, out.String())
	}
}
