// Package signature implements the provider's webhook signature scheme
// (document section 5.2): Base64 (standard alphabet, padded) of the
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

// rawDigestLength is the length of Base64 over the 32 digest bytes, the
// mistake the document calls out by name.
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
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	sum := mac.Sum(nil)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// Verify checks header against body under secret. It returns OK only for
// the one correct value; every other input yields the reason it failed.
// The comparison of the candidate with the expected value is constant-time.
func Verify(secret, body []byte, header string) Reason {
	switch {
	case header == "":
		return Missing
	case strings.HasPrefix(strings.ToLower(header), "sha256="):
		return Prefixed
	case len(header) == rawDigestLength:
		return RawDigest
	case len(header) != Length:
		return WrongLength
	}
	want := hexDigest(secret, body)
	expected := make([]byte, Length)
	base64.StdEncoding.Encode(expected, want)
	if subtle.ConstantTimeCompare(expected, []byte(header)) == 1 {
		return OK
	}
	// Only the diagnosis below looks inside the rejected value; the verdict
	// is already "rejected" whatever it finds.
	got, err := base64.StdEncoding.Strict().DecodeString(header)
	if err != nil {
		return NotBase64
	}
	if len(got) == len(want) && subtle.ConstantTimeCompare([]byte(strings.ToLower(string(got))), want) == 1 {
		return UppercaseHex
	}
	return Mismatch
}
