package demo

import (
	"strconv"
	"testing"
)

// TestAssembleRefusesGapsAndChangedCopies: the checks the demo and the
// end-to-end tests lean on.
func TestAssembleRefusesGapsAndChangedCopies(t *testing.T) {
	part := func(k, n int, items string) []byte {
		return []byte(`{"type":"batch.exported","timestamp":"2026-01-01T00:00:00Z","data":{"batch_id":"b1","part":` +
			strconv.Itoa(k) + `,"parts":` + strconv.Itoa(n) + `,"manifest":{"batch_id":"b1"},"items":[` + items + `]}}`)
	}
	ok := func(id string, body []byte) Message { return Message{ID: id, Body: body, Status: 200} }
	d, err := Assemble([]Message{ok("b1:1", part(1, 2, `{"a":1},{"a":2}`)), ok("b1:2", part(2, 2, `{"a":3}`)),
		ok("b1:1", part(1, 2, `{"a":1},{"a":2}`)), {ID: "b1:2", Body: part(2, 2, `{"z":0}`), Status: 500}}, "b1")
	if err != nil || string(d.Results) != "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n" || d.Parts != 2 || d.Items != 3 ||
		string(d.Manifest) != `{"batch_id":"b1"}` {
		t.Fatalf("assemble = %+v, %v", d, err)
	}
	for name, msgs := range map[string][]Message{
		"missing part": {ok("b1:2", part(2, 2, `{"a":3}`))},
		"changed copy": {ok("b1:1", part(1, 1, `{"a":1}`)), ok("b1:1", part(1, 1, `{"a":2}`))},
		"wrong id":     {ok("b1:r1:1", part(1, 1, `{"a":1}`))},
		"nothing":      {{ID: "b1:1", Body: part(1, 1, `{"a":1}`), Status: 401, Err: "bad signature"}},
	} {
		if _, err := Assemble(msgs, "b1"); err == nil {
			t.Fatalf("%s: assembled", name)
		}
	}
}
