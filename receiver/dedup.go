package receiver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// How a payment event is recognised when it comes again.
//
// The provider retries a delivery that was not acknowledged, and a
// captured one can be replayed (docs/provider-api.md §5.2 and §6): both carry
// the very same body. A transaction that changes (pending → paid) is a new
// event and must be logged, although its id is the same. So the key is
// made of the fields that together name one state of one transaction
// (BATCHHOOK_PAYMENTS_DEDUP_FIELDS, by default transaction.id,
// transaction.status and transaction.updated_at). The document does not
// show the events' bodies: when any listed field is missing, or is JSON
// null (DECISIONS 29: null does not count as present), the key falls back
// to the SHA-256 of the raw body, which still makes a retry or a replay a
// duplicate (same bytes), at the cost of logging twice an event the
// provider re-serialised differently.
//
// The two forms cannot collide: a fields key starts with "fields:" (or
// "fields-sha256:"), the fallback with "sha256:". A fields key is the
// compact JSON array of the values, each as written in the body (its JSON
// text, compacted), so "1" (a string) and 1 (a number) differ, and no
// separator inside a value can shift one value into the next. A key longer
// than maxFieldsKey is replaced by the SHA-256 of that array, so that an
// object or a long string as a value cannot make a huge bbolt key.

// maxFieldsKey bounds a "fields:" key; longer ones are hashed.
const maxFieldsKey = 512

// DedupKey returns the dedup key of a payment event: fields are its
// body's top-level members (decodeObject), paths the dedup fields split
// into segments, bodySHA256 the hex SHA-256 of the raw body.
func DedupKey(fields map[string]json.RawMessage, paths [][]string, bodySHA256 string) string {
	var arr bytes.Buffer
	arr.WriteByte('[')
	for i, p := range paths {
		raw, ok := lookup(fields, p)
		if !ok {
			return "sha256:" + bodySHA256
		}
		if i > 0 {
			arr.WriteByte(',')
		}
		if err := json.Compact(&arr, raw); err != nil {
			return "sha256:" + bodySHA256 // cannot happen for a strictly decoded body
		}
	}
	arr.WriteByte(']')
	if key := "fields:" + arr.String(); len(key) <= maxFieldsKey {
		return key
	}
	sum := sha256.Sum256(arr.Bytes())
	return "fields-sha256:" + hex.EncodeToString(sum[:])
}

// lookup follows a dotted path through nested objects; ok is false when a
// member is missing or null, or a step before the last is not an object.
func lookup(fields map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := fields
	for i, seg := range path {
		raw, ok := cur[seg]
		if !ok || isNull(raw) {
			return nil, false
		}
		if i == len(path)-1 {
			return raw, true
		}
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			return nil, false
		}
		var next map[string]json.RawMessage
		if err := json.Unmarshal(raw, &next); err != nil {
			return nil, false
		}
		cur = next
	}
	return nil, false
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// transactionID returns the body's transaction.id when it is a string of
// at most maxTransactionID bytes (a sink's record key), else "".
func transactionID(fields map[string]json.RawMessage) string {
	raw, ok := lookup(fields, []string{"transaction", "id"})
	if !ok {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) != nil || len(id) > maxTransactionID {
		return ""
	}
	return id
}
