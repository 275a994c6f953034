package lookupsim

import (
	"math/rand/v2"
	"strings"
)

// MaxCPFs is the document's cap on unique CPFs per batch (section 8).
const MaxCPFs = 1000

// normalizeCPF strips the punctuation a CPF is usually written with and
// reports whether 11 digits remain. Check digits are not checked here: a
// wrong one is answered not_found (see wellFormedCPF), not refused.
func normalizeCPF(s string) (string, bool) {
	var b strings.Builder
	b.Grow(11)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' || c == '-':
		case c >= '0' && c <= '9':
			if b.Len() == 11 {
				return "", false
			}
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	if b.Len() != 11 {
		return "", false
	}
	return b.String(), true
}

// normalizeCPFs validates, strips and deduplicates cpfs, keeping the first
// occurrence of each in order, and enforces 1 ≤ count ≤ MaxCPFs.
func normalizeCPFs(cpfs []string) ([]string, error) {
	out := make([]string, 0, len(cpfs))
	seen := make(map[string]struct{}, len(cpfs))
	for i, raw := range cpfs {
		c, ok := normalizeCPF(raw)
		if !ok {
			return nil, invalidf("cpfs[%d] is not an 11-digit CPF", i)
		}
		if _, dup := seen[c]; dup {
			continue
		}
		seen[c] = struct{}{}
		out = append(out, c)
	}
	switch {
	case len(out) == 0:
		return nil, invalidf("cpfs is empty")
	case len(out) > MaxCPFs:
		return nil, invalidf("%d unique CPFs, at most %d per batch", len(out), MaxCPFs)
	}
	return out, nil
}

// checkDigits computes the two mod-11 check digits of a 9-digit base.
func checkDigits(base [9]int) (int, int) {
	digit := func(ds []int) int {
		sum, w := 0, len(ds)+1
		for _, d := range ds {
			sum += d * w
			w--
		}
		if r := sum % 11; r >= 2 {
			return 11 - r
		}
		return 0
	}
	d1 := digit(base[:])
	d2 := digit(append(base[:], d1))
	return d1, d2
}

// wellFormedCPF says whether an 11-digit CPF has correct check digits and
// is not one digit repeated: only such a CPF can be in the service's base.
func wellFormedCPF(cpf string) bool {
	var base [9]int
	same := true
	for i := range base {
		base[i] = int(cpf[i] - '0')
		same = same && cpf[i] == cpf[0]
	}
	d1, d2 := checkDigits(base)
	return !same && int(cpf[9]-'0') == d1 && int(cpf[10]-'0') == d2
}

// SampleCPFs returns n distinct CPFs with correct check digits, never a
// run of one repeated digit, the same for the same seed. Tests and the
// demo use it so that fixtures are realistic without being anyone's real
// document list.
func SampleCPFs(n int, seed int64) []string {
	if n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c6f6f6b75707369)) // "lookupsi"
	out := make([]string, 0, n)
	seen := make(map[string]struct{}, n)
	for len(out) < n {
		var base [9]int
		same := true
		for i := range base {
			base[i] = rng.IntN(10)
			same = same && base[i] == base[0]
		}
		if same {
			continue
		}
		d1, d2 := checkDigits(base)
		buf := make([]byte, 11)
		for i, d := range base {
			buf[i] = byte('0' + d)
		}
		buf[9], buf[10] = byte('0'+d1), byte('0'+d2)
		c := string(buf)
		if _, dup := seen[c]; dup {
			continue
		}
		seen[c] = struct{}{}
		out = append(out, c)
	}
	return out
}
