package lookupsim

import (
	"math/rand/v2"
	"strings"

	"github.com/batchhook/batchhook/cpf"
)

// MaxCPFs is the cap on unique CPFs per batch (docs/provider-api.md §8).
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

// wellFormedCPF says whether an 11-digit CPF has correct check digits and
// is not one digit repeated: only such a CPF can be in the service's base.
func wellFormedCPF(c string) bool {
	_, err := cpf.Normalize(c)
	return err == nil
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
		base := make([]byte, 9)
		for i := range base {
			base[i] = byte('0' + rng.IntN(10))
		}
		if strings.Count(string(base), string(base[:1])) == 9 {
			continue
		}
		c := string(base) + cpf.CheckDigits(string(base))
		if _, dup := seen[c]; dup {
			continue
		}
		seen[c] = struct{}{}
		out = append(out, c)
	}
	return out
}
