package httpsink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"

	"github.com/batchhook/batchhook/sink"
)

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
// version: sink.IDBase, ":" and the part ("<batch_id>:<part>" for a first
// export, "<batch_id>:r<version>:<part>" for a later version), so a
// receiver that deduplicates on ids still takes a new version while a retry
// or a redeliver of the same version keeps its ids.
func MessageID(batchID string, version, part int) string {
	return sink.IDBase(batchID, version) + ":" + strconv.Itoa(part)
}
