package receiver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/receiver"
	"github.com/batchhook/batchhook/store"
)

// notifKeys is the field order of the bodies built by notif.
var notifKeys = []string{"event", "batch_id", "status", "total_requested", "total_found", "total_not_found", "completed_at"}

var notifDefaults = map[string]string{
	"event":           `"batch.completed"`,
	"batch_id":        `"b-1"`,
	"status":          `"completed"`,
	"total_requested": `3`,
	"total_found":     `2`,
	"total_not_found": `1`,
	"completed_at":    `"2026-11-22T10:00:00Z"`,
}

// dropField as an override value leaves the field out.
const dropField = "\x00drop"

// notif builds a body from the defaults with raw JSON overrides.
func notif(overrides map[string]string) []byte {
	var parts []string
	for _, k := range notifKeys {
		v, ok := overrides[k]
		if !ok {
			v = notifDefaults[k]
		}
		if v == dropField {
			continue
		}
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return []byte("{" + strings.Join(parts, ",") + "}")
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// nested returns a valid notification whose extra field "x" makes the
// body depth levels deep in total (the top object is level 1).
func nested(depth int, open, close string) []byte {
	b := notif(nil)
	inner := strings.Repeat(open, depth-1) + strings.Repeat(close, depth-1)
	return []byte(string(b[:len(b)-1]) + `,"x":` + inner + "}")
}

func i64(v int64) *int64 { return &v }

func TestParseAccepts(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		body      []byte
		want      store.Notification // Event, BatchID, Status, counters, CompletedAt
		flagWords []string           // one flag per entry, containing that word
	}{
		{
			name: "complete and consistent",
			body: notif(nil),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "each status: partial",
			body: notif(map[string]string{"status": `"partial"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "partial",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "each status: expired",
			body: notif(map[string]string{"status": `"expired"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "expired",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "each status: failed with zero counters",
			body: notif(map[string]string{"status": `"failed"`, "total_requested": "0", "total_found": "0", "total_not_found": "0"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "failed",
				TotalRequested: i64(0), TotalFound: i64(0), TotalNotFound: i64(0), CompletedAt: &base},
		},
		{
			name: "whitespace everywhere",
			body: []byte(" \n{ \"event\" : \"batch.completed\" ,\n\t\"batch_id\" :\"b-1\", \"status\": \"completed\" , " +
				"\"total_requested\" : 3 ,\"total_found\":\n2, \"total_not_found\" :1 , \"completed_at\" : \"2026-11-22T10:00:00Z\" }\r\n "),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "escaped strings",
			body: []byte(`{"event":"batch.complet\u0065d","batch_id":"b\u002d1","status":"complete\u0064","total_requested":3,"total_found":2,"total_not_found":1,"completed_at":"2026-11-22T10:00:00Z"}`),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "unknown fields tolerated",
			body: []byte(`{"event":"batch.completed","batch_id":"b-1","status":"completed","total_requested":3,"total_found":2,"total_not_found":1,"completed_at":"2026-11-22T10:00:00Z","version":2,"meta":{"a":[1,{"b":null}]},"note":"olá"}`),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "found + not_found > requested is flagged",
			body: notif(map[string]string{"total_requested": "3", "total_found": "3", "total_not_found": "1"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(3), TotalNotFound: i64(1), CompletedAt: &base},
			flagWords: []string{"total_found + total_not_found"},
		},
		{
			name: "found + not_found < requested is fine",
			body: notif(map[string]string{"total_requested": "10", "total_found": "3", "total_not_found": "1"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(10), TotalFound: i64(3), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "requested 1000 is fine",
			body: notif(map[string]string{"total_requested": "1000", "total_found": "600", "total_not_found": "400"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(1000), TotalFound: i64(600), TotalNotFound: i64(400), CompletedAt: &base},
		},
		{
			name: "requested 1001 is flagged",
			body: notif(map[string]string{"total_requested": "1001", "total_found": "600", "total_not_found": "401"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(1001), TotalFound: i64(600), TotalNotFound: i64(401), CompletedAt: &base},
			flagWords: []string{"total_requested"},
		},
		{
			name: "max int64 counter accepted, flagged, not kept (CPF-shaped)",
			body: notif(map[string]string{"total_requested": "9223372036854775807", "total_found": "0", "total_not_found": "0"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: nil, TotalFound: i64(0), TotalNotFound: i64(0), CompletedAt: &base},
			flagWords: []string{"total_requested ******************* is not a count (CPF-shaped): not kept"},
		},
		{
			name: "eight-digit counter kept, flagged over 1000",
			body: notif(map[string]string{"total_requested": "99999999", "total_found": "0", "total_not_found": "0"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(99999999), TotalFound: i64(0), TotalNotFound: i64(0), CompletedAt: &base},
			flagWords: []string{"total_requested 99999999 exceeds 1000"},
		},
		{
			name: "a CPF as total_found: accepted, flagged masked, not kept",
			body: notif(map[string]string{"total_requested": "5", "total_found": "52998224725", "total_not_found": "2"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(5), TotalFound: nil, TotalNotFound: i64(2), CompletedAt: &base},
			flagWords: []string{"total_found *********** is not a count"},
		},
		{
			name: "missing counter flagged",
			body: notif(map[string]string{"total_found": dropField}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalNotFound: i64(1), CompletedAt: &base},
			flagWords: []string{"total_found"},
		},
		{
			name: "null counter treated as missing",
			body: notif(map[string]string{"total_requested": "null"}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
			flagWords: []string{"total_requested"},
		},
		{
			name:      "all counters missing",
			body:      notif(map[string]string{"total_requested": dropField, "total_found": dropField, "total_not_found": dropField}),
			want:      store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed", CompletedAt: &base},
			flagWords: []string{"total_requested", "total_found", "total_not_found"},
		},
		{
			name: "completed_at +00:00",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00+00:00"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "completed_at +0000",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00+0000"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "completed_at fraction Z",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00.123456Z"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1),
				CompletedAt: timePtr(base.Add(123456 * time.Microsecond))},
		},
		{
			name: "completed_at fraction +00:00",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00.5+00:00"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1),
				CompletedAt: timePtr(base.Add(500 * time.Millisecond))},
		},
		{
			name: "completed_at fraction +0000",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00.123+0000"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1),
				CompletedAt: timePtr(base.Add(123 * time.Millisecond))},
		},
		{
			name: "completed_at non-UTC offset flagged",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00+01:00"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "completed_at non-UTC +0300 flagged",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00-0300"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "completed_at unparsable flagged",
			body: notif(map[string]string{"completed_at": `"yesterday"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "completed_at without zone flagged",
			body: notif(map[string]string{"completed_at": `"2026-11-22T10:00:00"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "completed_at a number flagged",
			body: notif(map[string]string{"completed_at": `1795860000`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "completed_at missing flagged",
			body: notif(map[string]string{"completed_at": dropField}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1)},
			flagWords: []string{"completed_at"},
		},
		{
			name: "several flags at once",
			body: notif(map[string]string{"total_requested": "2000", "total_found": "1500", "total_not_found": "600", "completed_at": `"soon"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(2000), TotalFound: i64(1500), TotalNotFound: i64(600)},
			flagWords: []string{"total_requested", "total_found + total_not_found", "completed_at"},
		},
		{
			name: "other event returned without status check",
			body: []byte(`{"event":"batch.started","batch_id":"b-2","status":"running","total_found":-1}`),
			want: store.Notification{Event: "batch.started", BatchID: "b-2"},
		},
		{
			name: "other event without status",
			body: []byte(`{"event":"payment.succeeded","batch_id":"tx:9"}`),
			want: store.Notification{Event: "payment.succeeded", BatchID: "tx:9"},
		},
		{
			name: "128-character id",
			body: notif(map[string]string{"batch_id": jsonString(strings.Repeat("a", 128))}),
			want: store.Notification{Event: "batch.completed", BatchID: strings.Repeat("a", 128), Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "id with . _ : -",
			body: notif(map[string]string{"batch_id": `"Ab9.x_y:z-0"`}),
			want: store.Notification{Event: "batch.completed", BatchID: "Ab9.x_y:z-0", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "nesting of exactly 16 arrays",
			body: nested(16, "[", "]"),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
		{
			name: "nesting of exactly 16 objects",
			body: nestedObjects(16),
			want: store.Notification{Event: "batch.completed", BatchID: "b-1", Status: "completed",
				TotalRequested: i64(3), TotalFound: i64(2), TotalNotFound: i64(1), CompletedAt: &base},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := receiver.MatchesOracle(tt.body); err != nil {
				t.Error(err)
			}
			n, err := receiver.Parse(tt.body)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.body, err)
			}
			if n.Event != tt.want.Event || n.BatchID != tt.want.BatchID || n.Status != tt.want.Status {
				t.Errorf("event, batch_id, status = %q, %q, %q; want %q, %q, %q",
					n.Event, n.BatchID, n.Status, tt.want.Event, tt.want.BatchID, tt.want.Status)
			}
			for _, c := range []struct {
				name      string
				got, want *int64
			}{
				{"total_requested", n.TotalRequested, tt.want.TotalRequested},
				{"total_found", n.TotalFound, tt.want.TotalFound},
				{"total_not_found", n.TotalNotFound, tt.want.TotalNotFound},
			} {
				if (c.got == nil) != (c.want == nil) || c.got != nil && *c.got != *c.want {
					t.Errorf("%s = %s, want %s", c.name, fmtPtr(c.got), fmtPtr(c.want))
				}
			}
			switch {
			case (n.CompletedAt == nil) != (tt.want.CompletedAt == nil):
				t.Errorf("completed_at = %v, want %v", n.CompletedAt, tt.want.CompletedAt)
			case n.CompletedAt != nil:
				if !n.CompletedAt.Equal(*tt.want.CompletedAt) {
					t.Errorf("completed_at = %v, want %v", *n.CompletedAt, *tt.want.CompletedAt)
				}
				if n.CompletedAt.Location() != time.UTC {
					t.Errorf("completed_at location = %v, want UTC", n.CompletedAt.Location())
				}
			}
			if len(n.Flags) != len(tt.flagWords) {
				t.Fatalf("flags = %q, want %d flags about %q", n.Flags, len(tt.flagWords), tt.flagWords)
			}
			for _, w := range tt.flagWords {
				found := false
				for _, f := range n.Flags {
					if strings.Contains(f, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("flags %q: none mentions %q", n.Flags, w)
				}
			}
		})
	}
}

// TestParseFlagsCounterSumOverflow: found + not_found is computed in int64
// and wraps, so two huge counters pass the "≤ requested" check.
func TestParseFlagsCounterSumOverflow(t *testing.T) {
	body := notif(map[string]string{"total_requested": "5", "total_found": "99999999", "total_not_found": "99999999"})
	n, err := receiver.Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, f := range n.Flags {
		if strings.Contains(f, "total_found + total_not_found") {
			return
		}
	}
	t.Errorf("flags = %q, want the found + not_found > requested flag", n.Flags)
}

func timePtr(t time.Time) *time.Time { return &t }

func fmtPtr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func nestedObjects(depth int) []byte {
	b := notif(nil)
	inner := strings.Repeat(`{"a":`, depth-1) + "0" + strings.Repeat("}", depth-1)
	return []byte(string(b[:len(b)-1]) + `,"x":` + inner + "}")
}

var unsafeIDs = []struct {
	name string
	id   string
}{
	{"empty", ""},
	{"dot", "."},
	{"dot dot", ".."},
	{"hidden", ".hidden"},
	{"slash", "a/b"},
	{"backslash", `a\b`},
	{"traversal", "../etc"},
	{"NUL", "a\x00b"},
	{"space", "a b"},
	{"newline", "a\nb"},
	{"division slash", "b\u2215x"},
	{"fullwidth", "ｂａｔｃｈ１"},
	{"fullwidth solidus", "a\uff0fb"},
	{"cyrillic a", "b\u0430tch"},
	{"percent", "a%2fb"},
	{"tilde", "~a"},
	{"129 chars", strings.Repeat("a", 129)},
	{"the payments day-file directory", "payments"},
	{"the payment message-id prefix", "payment"},
	// A CPF is personal data; a batch id is logged and names a directory.
	{"a CPF", "52998224725"},
	{"a punctuated CPF", "529.982.247-25"},
}

func TestCheckBatchID(t *testing.T) {
	for _, tt := range unsafeIDs {
		t.Run("unsafe "+tt.name, func(t *testing.T) {
			if err := store.CheckBatchID(tt.id); err == nil {
				t.Errorf("CheckBatchID(%q) = nil, want an error", tt.id)
			}
		})
	}
	for _, id := range []string{"a", "Z", "0", "b-1", "a.b", "a..b", "a.", "x_y", "ns:id", "-lead", "_lead", ":lead",
		"ABCdef0123456789", strings.Repeat("z", 128), "01HF8Z6Q3V4X5Y6Z7A8B9C0D1E",
		// Eleven digits that are not a CPF, and a CPF inside a longer id:
		// ids, not people (a UUID's last group can hold eleven digits).
		"52998224726", "b_52998224725", "4f1d7c2e-9b3a-4e21-a8c5-52998224725a"} {
		if err := store.CheckBatchID(id); err != nil {
			t.Errorf("CheckBatchID(%q) = %v, want nil", id, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	valid := notif(nil)
	tests := []struct {
		name string
		body []byte
	}{
		{"empty body", nil},
		{"not JSON", []byte("hello")},
		{"truncated", valid[:len(valid)-1]},
		{"BOM", append([]byte("\xef\xbb\xbf"), valid...)},
		{"top-level array", []byte("[" + string(valid) + "]")},
		{"top-level string", []byte(`"batch.completed"`)},
		{"top-level null", []byte(`null`)},
		{"trailing object", append(append([]byte{}, valid...), []byte("{}")...)},
		{"trailing garbage", append(append([]byte{}, valid...), []byte(" x")...)},
		{"trailing comma", append(append([]byte{}, valid...), ',')},
		{"two objects", append(append([]byte{}, valid...), valid...)},
		{"duplicate batch_id", []byte(`{"event":"batch.completed","batch_id":"b-1","batch_id":"b-2","status":"completed"}`)},
		{"duplicate status", []byte(`{"event":"batch.completed","batch_id":"b-1","status":"failed","status":"completed"}`)},
		{"duplicate via escape", []byte(`{"event":"batch.completed","batch_id":"b-1","batch\u005fid":"b-2","status":"completed"}`)},
		{"case-variant batch_id", []byte(`{"event":"batch.completed","batch_id":"b-1","Batch_ID":"b-2","status":"completed"}`)},
		{"case-variant event first", []byte(`{"EVENT":"x","event":"batch.completed","batch_id":"b-1","status":"completed"}`)},
		{"case-variant unknown", []byte(`{"event":"batch.completed","batch_id":"b-1","status":"completed","extra":1,"Extra":2}`)},
		{"duplicate in nested object", []byte(`{"event":"batch.completed","batch_id":"b-1","status":"completed","meta":{"a":1,"a":2}}`)},
		{"nesting 17 arrays", nested(17, "[", "]")},
		{"nesting 17 objects", nestedObjects(17)},
		{"nesting 10000", nested(10000, "[", "]")},
		{"event missing", notif(map[string]string{"event": dropField})},
		{"event empty", notif(map[string]string{"event": `""`})},
		{"event null", notif(map[string]string{"event": `null`})},
		{"event number", notif(map[string]string{"event": `1`})},
		{"event array", notif(map[string]string{"event": `["batch.completed"]`})},
		{"batch_id missing", notif(map[string]string{"batch_id": dropField})},
		{"batch_id null", notif(map[string]string{"batch_id": `null`})},
		{"batch_id number", notif(map[string]string{"batch_id": `12`})},
		{"batch_id object", notif(map[string]string{"batch_id": `{"id":"b"}`})},
		{"other event, unsafe id", []byte(`{"event":"batch.started","batch_id":"../x"}`)},
		{"other event, no id", []byte(`{"event":"batch.started"}`)},
		{"status missing", notif(map[string]string{"status": dropField})},
		{"status null", notif(map[string]string{"status": `null`})},
		{"status empty", notif(map[string]string{"status": `""`})},
		{"status unknown", notif(map[string]string{"status": `"done"`})},
		{"status in flight: processing", notif(map[string]string{"status": `"processing"`})},
		{"status in flight: pending", notif(map[string]string{"status": `"pending"`})},
		{"status capitalised", notif(map[string]string{"status": `"Completed"`})},
		{"status upper case", notif(map[string]string{"status": `"COMPLETED"`})},
		{"status padded", notif(map[string]string{"status": `" completed"`})},
		{"status number", notif(map[string]string{"status": `1`})},
	}
	for _, id := range unsafeIDs {
		tests = append(tests, struct {
			name string
			body []byte
		}{"batch_id " + id.name, notif(map[string]string{"batch_id": jsonString(id.id)})})
	}
	for _, counter := range []string{"total_requested", "total_found", "total_not_found"} {
		for _, v := range []string{`-1`, `-0`, `1.0`, `1e3`, `1E3`, `0.5`, `"3"`, `true`, `[]`, `{}`,
			`9223372036854775808`, `99999999999999999999999`} {
			tests = append(tests, struct {
				name string
				body []byte
			}{counter + "=" + v, notif(map[string]string{counter: v})})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := receiver.MatchesOracle(tt.body); err != nil {
				t.Error(err)
			}
			n, err := receiver.Parse(tt.body)
			if err == nil {
				t.Fatalf("Parse(%q) accepted: %+v", tt.body, n)
			}
		})
	}
}

// TestParseRejectsKeysThatEncodingJSONFolds: Parse refuses case-variant
// keys because encoding/json matches struct fields case-insensitively; its
// folding is Unicode simple folding, under which "ſtatus" (U+017F) and
// "total_requeſted" match "status" and "total_requested" too.
func TestParseRejectsKeysThatEncodingJSONFolds(t *testing.T) {
	for _, body := range []string{
		`{"event":"batch.completed","batch_id":"b-1","status":"completed","` + "\u017f" + `tatus":"failed"}`,
		`{"event":"batch.completed","batch_id":"b-1","status":"completed","total_requested":3,"total_reque` + "\u017f" + `ted":900}`,
	} {
		// Show the disagreement the strict check exists to prevent.
		var viaStruct struct {
			Status         string `json:"status"`
			TotalRequested int64  `json:"total_requested"`
		}
		if err := json.Unmarshal([]byte(body), &viaStruct); err != nil {
			t.Fatal(err)
		}
		if err := receiver.MatchesOracle([]byte(body)); err != nil {
			t.Error(err)
		}
		n, err := receiver.Parse([]byte(body))
		if err == nil {
			t.Errorf("Parse accepted %s: it reads status %q, requested %s; a struct decoder reads %q, %d",
				body, n.Status, fmtPtr(n.TotalRequested), viaStruct.Status, viaStruct.TotalRequested)
		}
	}
}
