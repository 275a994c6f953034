package httpsink

// The receiving side of the Standard Webhooks scheme, written from the
// specification (https://www.standardwebhooks.com/) and independent of
// Sign: it shares no code with the signer, so that what the sink sends is
// checked by someone else's reading of the specification. The demo's
// receiver and the end-to-end tests use it; its tests pin it to vectors
// made with openssl (testdata/make-webhook-vectors.sh).

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// VerifyTolerance is how far webhook-timestamp may be from the receiver's
// clock: the specification's suggested five minutes (replay protection).
const VerifyTolerance = 5 * time.Minute

// DecodeSecret decodes a whsec_ secret the way the specification says a
// receiver does: the key is the standard Base64 after the prefix.
func DecodeSecret(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("receiver secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, errors.New("receiver secret is not whsec_ and standard base64")
	}
	return key, nil
}

// Verify checks one request the way the specification describes: the
// three headers present, the body JSON, the timestamp within tolerance of
// now, and one of the space-separated "v1,<base64>" signatures equal (in
// constant time) to HMAC-SHA256(key, "<id>.<timestamp>.<body>"). It returns
// the request's timestamp (unix seconds) once it could read it, even when
// the request does not verify.
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) (int64, error) {
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return 0, errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	if ct, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || ct != "application/json" {
		return 0, errors.New("content type is not application/json")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return 0, errors.New("webhook-timestamp is not unix seconds")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ts, fmt.Errorf("webhook-timestamp is %s away from now", d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + tsText + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
			return ts, nil
		}
	}
	return ts, errors.New("no v1 signature matches")
}

// Part is the body of one part of an export, as docs/sinks.md's http sink
// contract gives it.
type Part struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		BatchID  string            `json:"batch_id"`
		Part     int               `json:"part"`
		Parts    int               `json:"parts"`
		Manifest json.RawMessage   `json:"manifest"`
		Items    []json.RawMessage `json:"items"`
	} `json:"data"`
}

// DecodePart decodes a part's body strictly: an unknown member is an
// error, so a change of the contract shows, and so is a part that is not
// a batch.exported numbered within its count.
func DecodePart(body []byte) (Part, error) {
	var p Part
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("decode part: %w", err)
	}
	if p.Type != "batch.exported" || p.Data.BatchID == "" || p.Data.Part < 1 || p.Data.Part > p.Data.Parts {
		return p, fmt.Errorf("part %q: type %q, part %d of %d", p.Data.BatchID, p.Type, p.Data.Part, p.Data.Parts)
	}
	return p, nil
}
