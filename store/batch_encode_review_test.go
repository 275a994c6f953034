package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A time json.Marshal refuses (an offset of 24 hours or more, which
// Time.UnmarshalJSON refuses too) is refused by the hand encoder as well:
// written, the record could never be read back (every List, Get and
// backfill that meets it would fail).
func TestEncodeBatchRefusesATimeEncodingJSONRefuses(t *testing.T) {
	for _, off := range []int{24 * 3600, -24 * 3600, 99*3600 + 59*60} {
		at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.FixedZone("", off))
		b := &Batch{ID: "b_zone", State: StateQueued, CreatedAt: t0, UpdatedAt: at}
		if _, err := json.Marshal(b); err == nil {
			t.Fatalf("offset %ds: json.Marshal accepts it; the case proves nothing", off)
		}
		v, err := encodeBatch(nil, b)
		if err == nil {
			_, derr := decodeBatch(b.ID, v)
			t.Fatalf("offset %ds: encodeBatch wrote %s (decodes: %v), json.Marshal refuses it", off, v, derr)
		}
	}
	// Offsets below a day, in either direction, still encode as before.
	for _, off := range []int{23*3600 + 59*60, -(23*3600 + 59*60), 5*3600 + 30*60} {
		b := &Batch{ID: "b_zone", State: StateQueued, CreatedAt: t0, UpdatedAt: time.Date(2026, 11, 24, 10, 0, 0, 5, time.FixedZone("", off))}
		checkEncodesLikeJSON(t, b)
	}
}

// Raw bodies at the edges of the raw_json form come back byte for byte
// through the hand encoder, and the record stays one valid JSON value.
func TestEncodeBatchRawEdgeCases(t *testing.T) {
	for _, raw := range []string{`null`, `"s"`, `1`, `[]`, `{}`, `{"a":"\ud800"}`, `{"a":"\\\""}`, `{"a":"\\"}`, `{"\"":"\\\\"}`} {
		b := &Batch{ID: "b_raw", State: StateQueued, CreatedAt: t0, UpdatedAt: t0, Notification: Notification{Raw: []byte(raw)}}
		v := checkEncodesLikeJSON(t, b)
		if !bytes.Contains(v, []byte(`"raw_json":`+raw+`}`)) {
			t.Errorf("raw %s not kept as JSON: %s", raw, v)
		}
	}
}

func checkEncodesLikeJSON(t *testing.T, b *Batch) []byte {
	t.Helper()
	want, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	got, err := encodeBatch(nil, b)
	if err != nil {
		t.Fatalf("encodeBatch: %v", err)
	}
	if !bytes.Equal(got, want) || !json.Valid(got) {
		t.Fatalf("encodeBatch %s\njson.Marshal %s", got, want)
	}
	back, err := decodeBatch(b.ID, got)
	if err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	if !back.UpdatedAt.Equal(b.UpdatedAt) || !bytes.Equal(back.Notification.Raw, b.Notification.Raw) {
		t.Fatalf("came back as updated %v raw %q, want %v %q", back.UpdatedAt, back.Notification.Raw, b.UpdatedAt, b.Notification.Raw)
	}
	return got
}
