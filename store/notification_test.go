package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var rawBodies = []string{
	`{"event":"batch.completed","batch_id":"b_1","status":"completed","total_requested":3}`,
	`{"event": "batch.completed", "batch_id": "b_1"}`, // whitespace: kept as Base64
	"{\"a\":\"x\"}\n",       // trailing newline
	`{"a":"<script>&amp;"}`, // escaped by json.Marshal
	"{\"a\":\"\u2028\u2029\"}",
	"{\"a\":\"\xff\xfe\"}", // invalid UTF-8
	`{"a":"\u003c","b":"\"","c":"\\"}`,
	`{"a":1e3,"b":-0.5,"c":[1,2,{"d":null}]}`,
	`{"a":"ſtatus","b":"\ud800"}`,
	`not json at all`,
	``,
	`{"a":1}{"b":2}`,
}

// Every body comes back byte for byte, whichever form it was stored in,
// and the compact bodies the provider sends are stored as JSON, not Base64.
func TestNotificationRawRoundTripsExactly(t *testing.T) {
	for _, body := range rawBodies {
		n := Notification{Event: "batch.completed", BatchID: "b_1", Raw: []byte(body)}
		if body == "" {
			n.Raw = nil
		}
		data, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		var back Notification
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%q: decode %s: %v", body, data, err)
		}
		if !bytes.Equal(back.Raw, n.Raw) {
			t.Errorf("raw %q came back as %q (stored %s)", body, back.Raw, data)
		}
		if back.BatchID != "b_1" || back.Event != "batch.completed" {
			t.Errorf("%q: fields came back as %+v", body, back)
		}
	}
	compact := Notification{Raw: []byte(rawBodies[0])}
	data, _ := json.Marshal(compact)
	if !bytes.Contains(data, []byte(`"raw_json":`+rawBodies[0])) || strings.Contains(string(data), `"raw":`) {
		t.Errorf("a compact body is not stored as JSON: %s", data)
	}
}

// A record written before the raw_json form (raw in Base64 only) still
// decodes.
func TestNotificationReadsTheBase64Form(t *testing.T) {
	var n Notification
	if err := json.Unmarshal([]byte(`{"event":"batch.completed","raw":"eyJhIjoxfQ=="}`), &n); err != nil {
		t.Fatal(err)
	}
	if string(n.Raw) != `{"a":1}` {
		t.Fatalf("raw = %q", n.Raw)
	}
}

func FuzzNotificationRawRoundTrip(f *testing.F) {
	for _, b := range rawBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 {
			return
		}
		data, err := json.Marshal(Notification{Raw: raw})
		if err != nil {
			t.Fatal(err)
		}
		var back Notification
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
		if !bytes.Equal(back.Raw, raw) {
			t.Fatalf("raw %q came back as %q", raw, back.Raw)
		}
	})
}
