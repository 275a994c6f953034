package store

import (
	"encoding/json"
)

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
