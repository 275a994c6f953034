package cpf

import (
	"bytes"
	"regexp"
	"testing"
	"unicode"
	"unicode/utf8"
)

// formatted is the usual written form of a CPF, which must never survive.
var formatted = regexp.MustCompile(`[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}`)

// FuzzScrub holds Scrub (and ScrubBytes) to what kept bodies and log lines
// rely on, for any input a stranger can send: it never panics; it changes
// nothing but digits, each into one '*', so the text keeps its length in
// characters and its layout; it only masks digits of runs of nine or more
// (a slow rune-by-rune reading of the input finds them here); no eleven
// digits in a row, no formatted CPF and no nine-digit run outside a kept
// UUID survive; and masking twice is masking once.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{
		"52998224725", "529.982.247-25", "529 . 982 . 247 - 25", "５２９９８２２４７２５", "id 1529982247250 unknown",
		"279c7f54-d32c-4aae-aa03-837033977a3c", "529982247-279c7f54-d32c-4aae-aa03-837033977a3c",
		"12345678-1234-1234-1234-123456789012", `{"total_found":52998224725,"52998224725":1}`,
		"version 1.2.3", "ação inválida", "\xff\xfe529982247", "1-2-3-4-5-6-7-8-9", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Scrub(in)
		if b := ScrubBytes([]byte(in)); !bytes.Equal(b, []byte(out)) {
			t.Fatalf("ScrubBytes(%q) = %q, Scrub = %q", in, b, out)
		}
		if again := Scrub(out); again != out {
			t.Fatalf("not idempotent: Scrub(%q) = %q, again %q", in, out, again)
		}
		ri, ro := runesOf(in), runesOf(out)
		if len(ri) != len(ro) {
			t.Fatalf("Scrub(%q) = %q: %d characters, want %d", in, out, len(ro), len(ri))
		}
		kept := keptUUIDs(in, len(ri))
		cut := make([]rune, len(ri)) // a kept UUID ends the runs beside it
		for i, r := range ri {
			if cut[i] = r; kept[i] {
				cut[i] = 'x'
			}
		}
		long := longRunDigits(cut)
		for i := range ri {
			switch {
			case ri[i] == ro[i]:
				if long[i] {
					t.Fatalf("Scrub(%q) = %q: character %d (%q) of a run of nine digits kept", in, out, i, ri[i])
				}
			case ro[i] != '*' || !unicode.IsDigit(ri[i]):
				t.Fatalf("Scrub(%q) = %q: character %d %q became %q", in, out, i, ri[i], ro[i])
			case !long[i]:
				t.Fatalf("Scrub(%q) = %q: digit %d masked outside a run of nine", in, out, i)
			}
		}
		if n := maxDigitsInARow(ro); n >= 11 {
			t.Fatalf("Scrub(%q) = %q keeps %d digits in a row", in, out, n)
		}
		if formatted.MatchString(out) {
			t.Fatalf("Scrub(%q) = %q keeps a formatted CPF", in, out)
		}
	})
}

// runesOf splits s into characters as Scrub reads it: an invalid byte is
// one character of its own.
func runesOf(s string) []rune {
	var out []rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			r = -1 - rune(s[i]) // keep invalid bytes apart from a real U+FFFD
		}
		out = append(out, r)
		i += n
	}
	return out
}

// longRunDigits marks the digits of rs that belong to a run of nine or
// more: digits joined by one to three separators or by nothing, read one
// character at a time.
func longRunDigits(rs []rune) []bool {
	mark := make([]bool, len(rs))
	for i := 0; i < len(rs); {
		if !unicode.IsDigit(rs[i]) {
			i++
			continue
		}
		members := []int{i}
		j := i + 1
		for {
			k := j
			for k < len(rs) && k-j <= maxSeparators && isSeparator(rs[k]) {
				k++
			}
			if k < len(rs) && k-j <= maxSeparators && unicode.IsDigit(rs[k]) {
				members = append(members, k)
				j = k + 1
				continue
			}
			break
		}
		if len(members) >= scrubMinDigits {
			for _, m := range members {
				mark[m] = true
			}
		}
		i = members[len(members)-1] + 1
	}
	return mark
}

// keptUUIDs marks the n characters of s that lie in a UUID Scrub keeps
// whole: one standing alone, without eleven digits in a row.
func keptUUIDs(s string, n int) []bool {
	mark := make([]bool, n)
	for _, sp := range uuidShape.FindAllStringIndex(s, -1) {
		if !standsAlone(s, sp[0], sp[1]) || maxDigitsInARow([]rune(s[sp[0]:sp[1]])) > uuidMaxDigits {
			continue
		}
		first := len(runesOf(s[:sp[0]]))
		for i := first; i < first+len(runesOf(s[sp[0]:sp[1]])); i++ {
			mark[i] = true
		}
	}
	return mark
}

func maxDigitsInARow(rs []rune) int {
	longest, n := 0, 0
	for _, r := range rs {
		if unicode.IsDigit(r) {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}
