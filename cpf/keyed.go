package cpf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// KeyedHash is the one form in which batchhook remembers a CPF it was asked
// to erase (LGPD art. 18): HMAC-SHA256 under a per-database key, hex. digits
// must be Normalize's 11 digits, so "123.456.789-09" and "12345678909" meet.
// A plain SHA-256 would not do: with about 10^9 valid CPFs, anyone holding
// the record could hash them all in minutes; without the key nobody can.
func KeyedHash(key []byte, digits string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(digits))
	return hex.EncodeToString(m.Sum(nil))
}

// shaped finds CPF-shaped runs in free text: 11 digits, or the usual
// 000.000.000-00, not glued to further digits.
var shaped = regexp.MustCompile(`(?:^|[^0-9])([0-9]{3}\.?[0-9]{3}\.?[0-9]{3}-?[0-9]{2})(?:[^0-9]|$)`)

// Candidates returns the valid CPFs (normalized) that appear in text,
// written either way: what an erasure compares, by keyed hash, against the
// one it erases when it has only that hash (a body kept in quarantine).
func Candidates(text []byte) []string {
	var out []string
	for i := 0; i < len(text); {
		loc := shaped.FindSubmatchIndex(text[i:])
		if loc == nil {
			break
		}
		if d, err := Normalize(string(text[i+loc[2] : i+loc[3]])); err == nil {
			out = append(out, d)
		}
		i += loc[3] // the separator after the run may start the next match
	}
	return out
}
