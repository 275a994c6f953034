package httpsink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts a Standard Webhooks secret: "whsec_" then the key
// in standard Base64.
const SecretPrefix = "whsec_"

// ErrBadSecret: a secret is not "whsec_" followed by non-empty standard
// Base64. Its text never holds the secret.
var ErrBadSecret = errors.New("secret must be whsec_ followed by standard base64 of the key")

// DecodeSecret turns a "whsec_<base64>" secret into the key bytes that
// sign, as Standard Webhooks libraries do, so an operator can give the
// same string to batchhook and to their receiver.
func DecodeSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// Sign returns the webhook-signature header value for one message:
// "v1," and the standard Base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>").
// It is exported so that the test vector made with openssl pins it.
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// MessageID is the webhook-id of part (counted from 1) of an export's
// version: "<batch_id>:<part>" for a first export and
// "<batch_id>:r<version>:<part>" after its version-th refetch (DECISIONS
// 22), so a receiver that deduplicates on ids still takes a new version
// while a retry or a redeliver of the same export keeps its ids.
func MessageID(batchID string, version, part int) string {
	if version > 0 {
		return fmt.Sprintf("%s:r%d:%d", batchID, version, part)
	}
	return fmt.Sprintf("%s:%d", batchID, part)
}
