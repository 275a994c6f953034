package admin

import (
	"crypto/sha256"
	"strings"
)

// bearerDigest returns the SHA-256 of the credentials in an Authorization
// header of the Bearer scheme, and false for any other header. The scheme
// name is matched case-insensitively ("bearer", "BEARER"), as RFC 9110
// section 11.1 says, and any spaces after it are skipped.
//
// auth compares digests, not the token itself: both sides are then 32
// bytes, so subtle.ConstantTimeCompare, which returns at once on a length
// mismatch, cannot tell a caller how long the token is.
func bearerDigest(header string) (string, bool) {
	scheme, creds, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	creds = strings.TrimLeft(creds, " ")
	if creds == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(creds))
	return string(sum[:]), true
}

// tokenDigest is the SHA-256 of the configured token, the other side of
// the compare.
func tokenDigest(token []byte) []byte {
	sum := sha256.Sum256(token)
	return sum[:]
}
