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

// uuidMaxDigits is the longest run of consecutive digits a UUID may hold
// and still be kept whole: eleven would be a whole CPF.
const uuidMaxDigits = 10

// Scrub is batchhook's one masking of CPFs in text it did not write: it
// returns s with every digit of every CPF-shaped run replaced by '*', one
// '*' a digit, the separators kept, so that the length and layout of what
// was sent stay visible ("cpf 529.982.247-25" → "cpf ***.***.***-**") and
// nothing of the number does. Use it on every value from a request or a
// provider before it reaches a log line, an error string or a kept body.
//
// A run is digits (any script's) joined by at most maxSeparators of the
// separators people and systems write CPFs with (space, tab, no-break
// space, dot, comma, hyphen or dash, slash, underscore), or by nothing:
// "529.982.247-25", "529 982 247 25", "52998224725" and "529982247-25" are
// all runs. A run of nine digits or more is CPF-shaped, whether or not its
// check digits are valid and even when it is longer than a CPF (a CPF glued
// to other digits is still in it): a log line or a kept body has no need of
// a nine-digit number. Shorter numbers are kept. Everything that is not a
// digit of a CPF-shaped run is kept byte for byte, so Scrub(Scrub(s)) is
// Scrub(s).
//
// A UUID (8-4-4-4-12 hex digits, not glued to more hex digits or hyphens)
// is kept whole unless it holds eleven digits in a row: batch, transaction
// and entry ids are UUIDs, and their digit groups joined by hyphens would
// otherwise form runs and mangle the one value an operator needs to quote.
//
// Text with no run of nine digits comes back as it is, without a copy.
func Scrub(s string) string {
	if !hasRun(s) {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	last := 0 // s[last:] is not yet written
	for _, sp := range uuidShape.FindAllStringIndex(s, -1) {
		if !standsAlone(s, sp[0], sp[1]) || digitsInARow(s[sp[0]:sp[1]]) > uuidMaxDigits {
			continue
		}
		maskRuns(&out, s[last:sp[0]])
		out.WriteString(s[sp[0]:sp[1]])
		last = sp[1]
	}
	maskRuns(&out, s[last:])
	return out.String()
}

// ScrubBytes is Scrub for a body: b itself when it holds no CPF-shaped
// run, else a masked copy.
func ScrubBytes(b []byte) []byte {
	if !hasRun(string(b)) { // the conversion does not copy (the compiler sees it is only read)
		return b
	}
	return []byte(Scrub(string(b)))
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

// digitsInARow is the longest run of consecutive ASCII digits in s.
func digitsInARow(s string) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

// hasRun reports whether s holds a CPF-shaped run anywhere, ignoring
// UUIDs: the quick test that lets text without one through untouched. A
// byte that is ASCII and not a digit costs one comparison.
func hasRun(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && (c < '0' || c > '9') {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsDigit(r) {
			i += n
			continue
		}
		end, digits := digitRun(s, i)
		if digits >= scrubMinDigits {
			return true
		}
		i = end
	}
	return false
}

// maskRuns writes s to out with the digits of its CPF-shaped runs masked
// (see Scrub).
func maskRuns(out *strings.Builder, s string) {
	last := 0 // s[last:i] is not yet written
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && (c < '0' || c > '9') {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsDigit(r) {
			i += n
			continue
		}
		end, digits := digitRun(s, i)
		if digits >= scrubMinDigits {
			out.WriteString(s[last:i])
			for j := i; j < end; {
				r, n := utf8.DecodeRuneInString(s[j:])
				if unicode.IsDigit(r) {
					out.WriteByte('*')
				} else {
					out.WriteString(s[j : j+n])
				}
				j += n
			}
			last = end
		}
		i = end
	}
	out.WriteString(s[last:])
}

// digitRun reads the run that starts with the digit at s[start]: it returns
// the byte offset just past its last digit and how many digits it holds.
func digitRun(s string, start int) (end, digits int) {
	i := start
	for {
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
		digits++
		end = i
		seps := 0
		var r rune
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
