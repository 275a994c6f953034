package demo

// A minimal Standard Webhooks receiver (https://www.standardwebhooks.com/):
// the demo's `--sink http` and the end-to-end tests use it to prove that
// what the http sink sends verifies with httpsink.Verify (written from the
// specification, sharing no code with the signer), and that the parts put
// back together are the export.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/batchhook/batchhook/sink/httpsink"
)

// maxBody bounds one request body: a part of 10,000 items of a few
// hundred bytes each, with room to spare.
const maxBody = 16 << 20

// Message is one request the receiver took.
type Message struct {
	ID        string
	Timestamp int64
	Body      []byte
	Status    int    // what the receiver answered
	Err       string // why the request did not verify; "" when it did
	At        time.Time
}

// Receiver verifies every request and records it. answer chooses the
// status of a verified request (nil: 200); it may block until ctx ends,
// to play a receiver that hangs.
type Receiver struct {
	key    []byte
	now    func() time.Time
	answer func(ctx context.Context, m Message) int

	mu   sync.Mutex
	msgs []Message
}

// NewReceiver decodes a whsec_ secret as the specification says (the key
// is the Base64 after the prefix).
func NewReceiver(secret string, answer func(context.Context, Message) int) (*Receiver, error) {
	key, err := httpsink.DecodeSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Receiver{key: key, now: time.Now, answer: answer}, nil
}

// ServeHTTP takes one POST: it verifies it, records it and answers.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	m := Message{ID: req.Header.Get("webhook-id"), Body: body, At: r.now()}
	switch ts, verr := httpsink.Verify(r.key, req.Header, body, r.now(), httpsink.VerifyTolerance); {
	case len(body) > maxBody:
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

// Messages returns a copy of what the receiver took, in arrival order.
func (r *Receiver) Messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

// Delivery is one batch put back together from its accepted parts.
type Delivery struct {
	Parts    int
	Items    int
	Results  []byte // the items, one a line, as results.ndjson holds them
	Manifest []byte // data.manifest of the parts (all equal)
}

// Assemble puts batchID's export back together from the verified, 2xx
// answered messages with ids "<batchID>:<part>": every part 1..n present,
// every copy of an id byte-identical, every part naming the same manifest
// and count. Messages of other batches are ignored.
func Assemble(msgs []Message, batchID string) (Delivery, error) {
	var out Delivery
	bodies := map[int][]byte{}
	for _, m := range msgs {
		if m.Err != "" || m.Status < 200 || m.Status > 299 {
			continue
		}
		p, err := httpsink.DecodePart(m.Body)
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
		p, _ := httpsink.DecodePart(body)
		for _, it := range p.Data.Items {
			results.Write(it)
			results.WriteByte('\n')
			out.Items++
		}
	}
	out.Results = results.Bytes()
	return out, nil
}
