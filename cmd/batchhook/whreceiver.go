package main

// A minimal Standard Webhooks receiver (https://www.standardwebhooks.com/),
// written from the specification and independent of sink/httpsink: the
// demo's `--sink http` and the end-to-end tests use it to prove that what
// the http sink sends verifies with someone else's code, and that the
// parts put back together are the export.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// whMaxBody bounds one request body: a part of 10,000 items of a few
// hundred bytes each, with room to spare.
const whMaxBody = 16 << 20

// whTolerance is how far webhook-timestamp may be from the receiver's
// clock, the specification's suggested five minutes (replay protection).
const whTolerance = 5 * time.Minute

// whMessage is one request the receiver took.
type whMessage struct {
	ID        string
	Timestamp int64
	Body      []byte
	Status    int    // what the receiver answered
	Err       string // why the request did not verify; "" when it did
	At        time.Time
}

// whReceiver verifies every request and records it. answer chooses the
// status of a verified request (nil: 200); it may block until ctx ends,
// to play a receiver that hangs.
type whReceiver struct {
	key    []byte
	now    func() time.Time
	answer func(ctx context.Context, m whMessage) int

	mu   sync.Mutex
	msgs []whMessage
}

// newWHReceiver decodes a whsec_ secret as the specification says (the key
// is the Base64 after the prefix).
func newWHReceiver(secret string, answer func(context.Context, whMessage) int) (*whReceiver, error) {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("receiver secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, errors.New("receiver secret is not whsec_ and standard base64")
	}
	return &whReceiver{key: key, now: time.Now, answer: answer}, nil
}

func (r *whReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, whMaxBody+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	m := whMessage{ID: req.Header.Get("webhook-id"), Body: body, At: r.now()}
	switch ts, verr := whVerify(r.key, req.Header, body, r.now(), whTolerance); {
	case len(body) > whMaxBody:
		m.Status, m.Err = http.StatusRequestEntityTooLarge, "body too large"
	case verr != nil:
		m.Status, m.Err, m.Timestamp = http.StatusUnauthorized, verr.Error(), ts
	default:
		m.Status, m.Timestamp = http.StatusOK, ts
		if r.answer != nil {
			m.Status = r.answer(req.Context(), m)
		}
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	w.WriteHeader(m.Status)
}

// messages returns a copy of what the receiver took, in arrival order.
func (r *whReceiver) messages() []whMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]whMessage(nil), r.msgs...)
}

// whVerify checks one request the way the specification describes: the
// three headers present, the timestamp within tolerance, and one of the
// space-separated "v1,<base64>" signatures equal (in constant time) to
// HMAC-SHA256(key, "<id>.<timestamp>.<body>").
func whVerify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) (int64, error) {
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

// whPart is the body of one part, as the README's http sink contract
// gives it.
type whPart struct {
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

// decodeWHPart decodes a body strictly: unknown members are an error, so a
// change of the contract shows.
func decodeWHPart(body []byte) (whPart, error) {
	var p whPart
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

// whDelivery is one batch put back together from its accepted parts.
type whDelivery struct {
	Parts    int
	Items    int
	Results  []byte // the items, one a line, as results.ndjson holds them
	Manifest []byte // data.manifest of the parts (all equal)
}

// assemble puts batchID's export back together from the verified, 2xx
// answered messages with ids "<batchID>:<part>": every part 1..n present,
// every copy of an id byte-identical, every part naming the same manifest
// and count. Messages of other batches are ignored.
func assemble(msgs []whMessage, batchID string) (whDelivery, error) {
	var out whDelivery
	bodies := map[int][]byte{}
	for _, m := range msgs {
		if m.Err != "" || m.Status < 200 || m.Status > 299 {
			continue
		}
		p, err := decodeWHPart(m.Body)
		if err != nil {
			return out, err
		}
		if p.Data.BatchID != batchID {
			continue
		}
		if want := fmt.Sprintf("%s:%d", batchID, p.Data.Part); m.ID != want {
			return out, fmt.Errorf("webhook-id %q for part %d, want %q", m.ID, p.Data.Part, want)
		}
		if prev, ok := bodies[p.Data.Part]; ok && !bytes.Equal(prev, m.Body) {
			return out, fmt.Errorf("part %d of %s was sent twice with different bodies", p.Data.Part, batchID)
		}
		if out.Parts != 0 && (p.Data.Parts != out.Parts || !bytes.Equal(p.Data.Manifest, out.Manifest)) {
			return out, fmt.Errorf("parts of %s disagree on the part count or the manifest", batchID)
		}
		out.Parts, out.Manifest = p.Data.Parts, p.Data.Manifest
		bodies[p.Data.Part] = m.Body
	}
	if out.Parts == 0 {
		return out, fmt.Errorf("no part of %s was accepted", batchID)
	}
	var results bytes.Buffer
	for k := 1; k <= out.Parts; k++ {
		body, ok := bodies[k]
		if !ok {
			return out, fmt.Errorf("part %d of %d of %s is missing", k, out.Parts, batchID)
		}
		p, _ := decodeWHPart(body)
		for _, it := range p.Data.Items {
			results.Write(it)
			results.WriteByte('\n')
			out.Items++
		}
	}
	out.Results = results.Bytes()
	return out, nil
}
