// Package signature implements the provider's webhook signature scheme
// (docs/provider-api.md §5.2): Base64 (standard alphabet, padded) of the
// lowercase hexadecimal rendering of HMAC-SHA256(secret, raw body).
//
// The scheme is unusual: the Base64 covers the 64-character hex text, not
// the 32 digest bytes, so a correct value is 88 characters long. Verify
// names the common ways a value goes wrong (a 44-character raw-digest
// encoding, a "sha256=" prefix, uppercase hex) so that an operator reading a
// rejection log line knows which mistake the sender made.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Header is the HTTP header that carries the signature.
const Header = "x-service-webhook-signature"

// Length is the length of a correct header value: Base64 of 64 hex characters.
const Length = 88

// prefix is the "sha256=" some senders put in front (GitHub's scheme),
// matched in any case.
const prefix = "sha256="

// rawDigestLength is the length of Base64 over the 32 digest bytes, the
// mistake docs/provider-api.md §5.2 calls out by name.
const rawDigestLength = 44

// Reason says why a signature was rejected. The values are stable: they
// appear in logs and metrics.
type Reason string

// The reasons Verify reports. OK means the signature is valid.
const (
	OK           Reason = ""
	Missing      Reason = "missing"
	Prefixed     Reason = "sha256_prefix"
	RawDigest    Reason = "raw_digest_encoding"
	WrongLength  Reason = "wrong_length"
	NotBase64    Reason = "not_base64"
	UppercaseHex Reason = "uppercase_hex"
	Mismatch     Reason = "mismatch"
)

// Sign returns the header value for body under secret.
func Sign(secret, body []byte) string {
	return base64.StdEncoding.EncodeToString(hexDigest(secret, body))
}

func hexDigest(secret, body []byte) []byte {
	var out [hexLength]byte
	hexDigestTo(&out, secret, body)
	return out[:]
}

// hexLength is the length of the hex rendering of a SHA-256 digest.
const hexLength = 2 * sha256.Size

// hexDigestTo writes the lowercase hex HMAC into dst: the verify path
// keeps it on the stack (every request pays this).
func hexDigestTo(dst *[hexLength]byte, secret, body []byte) {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	var sum [sha256.Size]byte
	hex.Encode(dst[:], mac.Sum(sum[:0]))
}

// Verify checks header against body under secret. It returns OK only for
// the one correct value; every other input yields the reason it failed.
// The comparison of the candidate with the expected value is constant-time.
func Verify(secret, body []byte, header string) Reason {
	switch {
	case header == "":
		return Missing
	case len(header) >= len(prefix) && strings.EqualFold(header[:len(prefix)], prefix):
		return Prefixed
	case len(header) == rawDigestLength:
		return RawDigest
	case len(header) != Length:
		return WrongLength
	}
	// Fixed-size arrays: nothing here escapes to the heap.
	var want [hexLength]byte
	hexDigestTo(&want, secret, body)
	var expected, got88 [Length]byte
	base64.StdEncoding.Encode(expected[:], want[:])
	copy(got88[:], header)
	if subtle.ConstantTimeCompare(expected[:], got88[:]) == 1 {
		return OK
	}
	// Only the diagnosis below looks inside the rejected value; the verdict
	// is already "rejected" whatever it finds.
	got, err := base64.StdEncoding.Strict().DecodeString(header)
	if err != nil {
		return NotBase64
	}
	if len(got) == len(want) && subtle.ConstantTimeCompare([]byte(strings.ToLower(string(got))), want[:]) == 1 {
		return UppercaseHex
	}
	return Mismatch
}
