package store

import (
	"encoding/json"
	"time"
)

// Source says how batchhook learned that a batch was final.
const (
	SourceWebhook = "webhook"
	SourcePoll    = "poll"
)

// Notification is one accepted batch.completed delivery. Raw is the body
// exactly as received and signed; the other fields are what validation read
// from it. A counter the body did not carry is nil.
type Notification struct {
	Event          string     `json:"event"`
	BatchID        string     `json:"batch_id"`
	Status         string     `json:"status"`
	TotalRequested *int64     `json:"total_requested"`
	TotalFound     *int64     `json:"total_found"`
	TotalNotFound  *int64     `json:"total_not_found"`
	CompletedAt    *time.Time `json:"completed_at"`
	// Flags lists what looked wrong but was accepted so that a genuine
	// batch is never lost to a rejection the provider retries for ever
	// (counter relations, an unparsable completed_at).
	Flags      []string  `json:"flags,omitempty"`
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
	Source     string    `json:"source"`
	Raw        []byte    `json:"raw"`
}

// A notification's raw body is kept exactly as signed. encoding/json would
// store a []byte as Base64 (a third larger); a body that json.Marshal
// copies byte for byte is stored as JSON instead (raw_json). That is a
// body that is valid JSON, compact (no whitespace outside strings), valid
// UTF-8, without <, > or & (escaped as \u003c…) and without U+2028 or
// U+2029 (escaped too): the webhook bodies the provider sends. Any other
// body keeps the Base64 form (raw), so nothing is ever altered.

// MarshalJSON encodes n with its raw body as JSON when that keeps it
// byte for byte (verbatim), as Base64 otherwise.
func (n Notification) MarshalJSON() ([]byte, error) {
	type plain Notification
	if !verbatim(n.Raw) {
		return json.Marshal(plain(n))
	}
	return json.Marshal(struct {
		plain
		Raw     []byte          `json:"raw,omitempty"`
		RawJSON json.RawMessage `json:"raw_json"`
	}{plain: plain(n), RawJSON: n.Raw})
}

// UnmarshalJSON reads either form of the raw body.
func (n *Notification) UnmarshalJSON(data []byte) error {
	type plain Notification
	aux := struct {
		*plain
		RawJSON json.RawMessage `json:"raw_json"`
	}{plain: (*plain)(n)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	if aux.RawJSON != nil {
		n.Raw = aux.RawJSON // Unmarshal gave RawMessage its own copy
	}
	return nil
}
