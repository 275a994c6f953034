package cpf

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// scrubMinDigits is how many digits in one run make it CPF-shaped. Nine,
// not eleven: the first nine digits of a CPF determine its two check
// digits, so a run of nine discloses the whole number.
const scrubMinDigits = 9

// maxSeparators is how many separator characters may stand between two
// digits of one run ("529.982.247 - 25" has three).
const maxSeparators = 3

// Scrub returns s with every CPF-shaped digit run replaced by "***". A run
// is digits joined by at most maxSeparators of the separators people and
// systems write CPFs with (space, tab, no-break space, dot, comma, hyphen
// or dash, slash, underscore), or by nothing: "529.982.247-25",
// "529 982 247 25", "52998224725" and "529982247-25" are all masked. A run
// of nine digits or more is masked whole, even when it is longer than a CPF
// (a CPF glued to other digits is still in it); shorter numbers are kept.
// Use it on every text a provider wrote (error bodies, statuses) before it
// reaches a log line or an error string: a provider may echo a CPF back.
//
// UUID-shaped tokens (8-4-4-4-12 hex digits) are kept whole: batch,
// transaction and entry ids are UUIDs, and their hex groups can hold a
// CPF-shaped run ("aa03-837033977a3c"), which would mangle the one value an
// operator needs to quote. A UUID is not where personal data is written.
func Scrub(s string) string {
	var out strings.Builder
	last := 0 // s[last:] is not yet written
	for _, sp := range uuidShape.FindAllStringIndex(s, -1) {
		if !standsAlone(s, sp[0], sp[1]) {
			continue
		}
		out.WriteString(scrubDigits(s[last:sp[0]]))
		out.WriteString(s[sp[0]:sp[1]])
		last = sp[1]
	}
	if last == 0 {
		return scrubDigits(s)
	}
	out.WriteString(scrubDigits(s[last:]))
	return out.String()
}

// uuidShape matches a UUID in its canonical text form.
var uuidShape = regexp.MustCompile(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`)

// standsAlone reports whether s[start:end] is not part of a longer run of
// hex digits and hyphens: "52998224725-…" glued to more digits is not a
// UUID and keeps being scrubbed.
func standsAlone(s string, start, end int) bool {
	inRun := func(c byte) bool {
		return c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
	}
	return (start == 0 || !inRun(s[start-1])) && (end == len(s) || !inRun(s[end]))
}

// scrubDigits masks the CPF-shaped digit runs of s (see Scrub).
func scrubDigits(s string) string {
	var out strings.Builder
	last := 0 // s[last:i] is not yet copied
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsDigit(r) {
			i += n
			continue
		}
		end, digits := digitRun(s, i)
		if digits >= scrubMinDigits {
			out.WriteString(s[last:i])
			out.WriteString("***")
			last = end
		}
		i = end
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// digitRun reads the run that starts with the digit at s[start]: it returns
// the byte offset just past its last digit and how many digits it holds.
func digitRun(s string, start int) (end, digits int) {
	i := start
	for {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		digits++
		end = i
		seps := 0
		for i < len(s) && seps <= maxSeparators {
			r, n = utf8.DecodeRuneInString(s[i:])
			if !isSeparator(r) {
				break
			}
			i += n
			seps++
		}
		if i >= len(s) || seps > maxSeparators {
			return end, digits
		}
		if r, _ = utf8.DecodeRuneInString(s[i:]); !unicode.IsDigit(r) {
			return end, digits
		}
	}
}

func isSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\u00a0', '.', ',', '-', '/', '_':
		return true
	}
	return unicode.Is(unicode.Pd, r) // en dash, em dash, …
}
