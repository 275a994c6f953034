package fetcher

import (
	"bytes"
	"encoding/json"
	"testing"
)

// splitReference is what ParsePage did before splitArray: decode into
// []json.RawMessage, then json.Compact each item.
func splitReference(raw []byte) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, false
	}
	for i, it := range items {
		var buf bytes.Buffer
		if err := json.Compact(&buf, it); err != nil {
			return nil, false
		}
		items[i] = buf.Bytes()
	}
	return items, true
}

var splitSeeds = []string{
	`[]`, ` [ ] `, `[1]`, `[ 1 , 2 ]`, `[null,true,false,-1.5e+3,"x"]`,
	`[{"a":1},{"b":[1,2,{"c":"]}"}]}]`,
	"[ {\"cpf\" : \"123\",\n  \"p\" : { \"n\" : \"Ana  Maria\" , \"t\" : [ 1 , 2 ] } } ,\n\t\"s  p\"\r\n, 7 , null , [ ] ]",
	`["q\"uote","back\\slash\\","\u00e9 \n",{"k\\\"":"v]"}]`,
	`[[[[]]],{"":{}},[ { } ]]`,
	`[{"nome":"João Ñandú 😀","ls":"x` + "\u2028" + `y"}]`,
	`[12345678901234567890123, 0, -0.0]`,
}

func TestSplitArrayMatchesDecodeAndCompact(t *testing.T) {
	for _, s := range splitSeeds {
		checkSplit(t, []byte(s))
	}
}

func FuzzSplitArray(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // ParsePage only hands it a value from a validated page
		}
		checkSplit(t, raw)
	})
}

func checkSplit(t *testing.T, raw []byte) {
	t.Helper()
	want, isArray := splitReference(raw)
	got, err := splitArray(raw)
	if !isArray {
		if err == nil {
			t.Fatalf("splitArray(%q) = %q, want an error (not an array)", raw, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("splitArray(%q): %v", raw, err)
	}
	if len(got) != len(want) {
		t.Fatalf("splitArray(%q) = %q, want %q", raw, got, want)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("splitArray(%q) item %d = %q, want %q", raw, i, got[i], want[i])
		}
	}
}

var objectSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, `{ "a" : [ 1 , 2 ] , "b" : { "c" : "}" } }`,
	`{"next_cursor":null,"results":[{"cpf":"1"}]}`, `{"a":1,"a":2}`,
	`{"next\u005fcursor":"x","k\"q":true,"":null}`, `[1]`, `null`, `"s"`, `{"a":"\\"}`,
	"{\"\x80\":{}}", // invalid UTF-8 in a name: the decoder replaces it
}

func TestObjectMembersMatchDecode(t *testing.T) {
	for _, s := range objectSeeds {
		checkMembers(t, []byte(s))
	}
}

func FuzzObjectMembers(f *testing.F) {
	for _, s := range objectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkMembers(t, body) })
}

func checkMembers(t *testing.T, body []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	werr := json.Unmarshal(body, &want)
	got, err := objectMembers(body)
	if werr != nil || want == nil { // invalid, or not an object (null)
		if err == nil {
			t.Fatalf("objectMembers(%q) = %q, want an error", body, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("objectMembers(%q): %v", body, err)
	}
	if len(got) != len(want) {
		t.Fatalf("objectMembers(%q) = %q, want %q", body, got, want)
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("objectMembers(%q)[%q] = %q, want %q", body, k, got[k], v)
		}
	}
}
