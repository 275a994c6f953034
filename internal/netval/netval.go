// Package netval makes a value that came from the network fit for a log
// line. A stranger chooses the paths, headers and body fields batchhook
// may quote in a line; quoted as sent, they could put a CPF in the log
// (personal data never goes there) or make one line cost megabytes (the
// samplers bound lines, not bytes). Text bounds both.
package netval

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batchhook/batchhook/cpf"
)

// Text returns s for a log line: cut to at most max bytes of its start (at
// a character boundary, the cut marked with "…(N bytes)" naming the
// length sent), invalid UTF-8 replaced, and every CPF-shaped digit run
// masked (cpf.Scrub). The cut comes first, so a long value costs no more
// work than a short one; a run the cut splits is masked if nine or more
// of its digits are kept (fewer do not disclose a CPF, see cpf.Scrub).
func Text(s string, max int) string {
	total := len(s)
	cut := s
	if len(cut) > max {
		n := max
		for n > 0 && !utf8.RuneStart(cut[n]) {
			n--
		}
		cut = cut[:n]
	}
	cut = cpf.Scrub(strings.ToValidUTF8(cut, "\uFFFD"))
	if total > max {
		return cut + "…(" + strconv.Itoa(total) + " bytes)"
	}
	return cut
}

// Caps for the kinds of values batchhook quotes.
const (
	// Path caps a request path: long enough to tell which route a caller
	// tried, short enough that a 19,000-character path costs ~150 bytes.
	Path = 120
	// Header caps a header value such as X-Service-Event.
	Header = 120
	// Field caps a value read from a signed body in an error reason.
	Field = 40
	// ServerError caps a line net/http writes about a client's failure.
	ServerError = 300
)
