// Package logsample caps the log lines a stranger can cause. Anyone who can
// reach a listener can send forged, oversized or aborted requests by the
// thousand; one line each would fill the disk and bury the lines that
// matter. Every such line goes through a Sampler: at most Burst lines a
// Period are written, shared by all the events of one listener, and each
// line dropped is reported by event so that a metric still counts it.
package logsample

import (
	"bytes"
	"log"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/netval"
)

// Sampler is one budget of log lines, shared by the loggers it makes.
type Sampler struct {
	burst   *zerolog.BurstSampler
	dropped func(event string)
}

// New returns a Sampler that lets burst lines a period through and calls
// dropped (which may be nil) with the event of each line it drops.
func New(burst uint32, period time.Duration, dropped func(event string)) *Sampler {
	if dropped == nil {
		dropped = func(string) {}
	}
	return &Sampler{burst: &zerolog.BurstSampler{Burst: burst, Period: period}, dropped: dropped}
}

// Logger returns base, sampled by s, for the lines of event. The level is
// checked first, so only lines that would have been written count as
// dropped.
func (s *Sampler) Logger(base zerolog.Logger, event string) zerolog.Logger {
	return base.Sample(eventSampler{s: s, event: event})
}

// ErrorLog returns a standard logger for http.Server.ErrorLog: net/http
// writes a line for some failures a client causes (a failed TLS
// handshake, an accept error when descriptors run out); each becomes a
// sampled warning with the given event.
func (s *Sampler) ErrorLog(base zerolog.Logger, event string) *log.Logger {
	return log.New(errorWriter{log: s.Logger(base, event), event: event}, "", 0)
}

type eventSampler struct {
	s     *Sampler
	event string
}

func (e eventSampler) Sample(lvl zerolog.Level) bool {
	if e.s.burst.Sample(lvl) {
		return true
	}
	e.s.dropped(e.event)
	return false
}

type errorWriter struct {
	log   zerolog.Logger
	event string
}

func (w errorWriter) Write(p []byte) (int, error) {
	w.log.Warn().Str("event", w.event).Str("error", netval.Text(string(bytes.TrimSpace(p)), netval.ServerError)).Msg("HTTP server error")
	return len(p), nil
}
