// Package logging builds the process logger, so that the daemon's start
// and the demo log alike: JSON lines, or a console rendering for a person,
// each with a timestamp.
package logging

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// New builds a logger writing to w at level ("debug", "info", …; an
// unknown level is info). format "console" renders lines for a person,
// in colour only when w is a terminal; anything else writes JSON lines.
func New(level, format string, w io.Writer) zerolog.Logger {
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !IsTerminal(w)}
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// IsTerminal reports whether w is a terminal: a person is watching, so
// colour and progress lines are welcome.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
