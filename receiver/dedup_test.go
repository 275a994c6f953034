package receiver

import (
	"encoding/json"
	"strings"
	"testing"
)

func fieldsOf(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	f, err := decodeObject([]byte(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return f
}

func TestDedupKeyRules(t *testing.T) {
	const fallback = "sha256:BODYSUM"
	tests := []struct {
		name, body string
		paths      [][]string
		want       string
	}{
		{"all present", `{"transaction":{"id":"a","status":"paid","updated_at":"t"}}`, defaultDedup,
			`fields:["a","paid","t"]`},
		{"spacing inside values is compacted", `{"transaction":{"id": "a" ,"status":"paid","updated_at":"t"}}`, defaultDedup,
			`fields:["a","paid","t"]`},
		{"one missing", `{"transaction":{"id":"a","status":"paid"}}`, defaultDedup, fallback},
		{"one null", `{"transaction":{"id":"a","status":null,"updated_at":"t"}}`, defaultDedup, fallback},
		{"parent null", `{"transaction":null}`, defaultDedup, fallback},
		{"parent not an object", `{"transaction":"a"}`, defaultDedup, fallback},
		{"parent an array", `{"transaction":[{"id":"a"}]}`, [][]string{{"transaction", "id"}}, fallback},
		{"nested non-string values", `{"transaction":{"id":7,"status":true,"updated_at":1.50}}`, defaultDedup,
			`fields:[7,true,1.50]`},
		{"a number is not its string", `{"transaction":{"id":"7","status":"true","updated_at":"1.50"}}`, defaultDedup,
			`fields:["7","true","1.50"]`},
		{"an object value", `{"transaction":{"id":"a","status":{"code": 2, "text":"ok"},"updated_at":"t"}}`, defaultDedup,
			`fields:["a",{"code":2,"text":"ok"},"t"]`},
		{"an array value", `{"id":[1, 2]}`, [][]string{{"id"}}, `fields:[[1,2]]`},
		{"top-level path", `{"id":"x"}`, [][]string{{"id"}}, `fields:["x"]`},
		{"deep path", `{"a":{"b":{"c":{"d":"x"}}}}`, [][]string{{"a", "b", "c", "d"}}, `fields:["x"]`},
		{"empty string counts as present", `{"id":""}`, [][]string{{"id"}}, `fields:[""]`},
		{"a comma inside a value cannot shift values", `{"a":"x\",\"y","b":"z"}`, [][]string{{"a"}, {"b"}},
			`fields:["x\",\"y","z"]`},
	}
	for _, tt := range tests {
		got := DedupKey(fieldsOf(t, tt.body), tt.paths, "BODYSUM")
		if got != tt.want {
			t.Errorf("%s: key %q, want %q", tt.name, got, tt.want)
		}
	}
	// The fields form and the fallback cannot collide, whatever the value.
	k := DedupKey(fieldsOf(t, `{"id":"sha256:BODYSUM"}`), [][]string{{"id"}}, "BODYSUM")
	if k == fallback || !strings.HasPrefix(k, "fields:") {
		t.Fatalf("a value spelling the fallback gave %q", k)
	}
}

func TestDedupKeyOfALongValueIsHashed(t *testing.T) {
	long := strings.Repeat("x", 2000)
	a := DedupKey(fieldsOf(t, `{"id":"`+long+`"}`), [][]string{{"id"}}, "S")
	b := DedupKey(fieldsOf(t, `{"id":"`+long+`y"}`), [][]string{{"id"}}, "S")
	if !strings.HasPrefix(a, "fields-sha256:") || len(a) != len("fields-sha256:")+64 || a == b {
		t.Fatalf("long values: %q and %q", a, b)
	}
	if again := DedupKey(fieldsOf(t, `{"id":  "`+long+`"}`), [][]string{{"id"}}, "S"); again != a {
		t.Fatalf("the same value gave another key")
	}
}

func TestTransactionID(t *testing.T) {
	for body, want := range map[string]string{
		`{"transaction":{"id":"abc"}}`:                              "abc",
		`{"transaction":{"id":7}}`:                                  "",
		`{"transaction":{"id":null}}`:                               "",
		`{"id":"abc"}`:                                              "",
		`{"transaction":{"id":"` + strings.Repeat("a", 201) + `"}}`: "",
	} {
		if got := transactionID(fieldsOf(t, body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

func TestEventHeaderIsCapped(t *testing.T) {
	if got := eventHeader("transaction.paid"); got != "transaction.paid" {
		t.Fatal(got)
	}
	long := strings.Repeat("é", 150) // 300 bytes
	got := eventHeader(long)
	if len(got) > maxEventHeader || !strings.HasPrefix(long, got) || len(got) < maxEventHeader-1 {
		t.Fatalf("capped to %d bytes: %q", len(got), got)
	}
	if got := eventHeader("a\xffb"); got != "a\uFFFDb" {
		t.Fatalf("invalid UTF-8 kept: %q", got)
	}
}

// FuzzDedupKey: for any body the payments webhook accepts, the key is
// bounded, deterministic, and is the fallback exactly when a listed field is
// missing or null.
func FuzzDedupKey(f *testing.F) {
	for _, seed := range []string{
		`{"transaction":{"id":"a","status":"paid","updated_at":"t"}}`,
		`{"transaction":{"id":"a","status":null,"updated_at":"t"}}`,
		`{"transaction":{"id":{"x":[1,2,{"y":null}]},"status":"paid","updated_at":1e3}}`,
		`{"transaction":"a"}`,
		`{"transaction":{"id":"` + strings.Repeat("z", 600) + `","status":"s","updated_at":"u"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, err := decodeObject(body)
		if err != nil {
			return
		}
		key := DedupKey(fields, defaultDedup, "SUM")
		if key != DedupKey(fields, defaultDedup, "SUM") {
			t.Fatal("not deterministic")
		}
		if len(key) > maxFieldsKey {
			t.Fatalf("key of %d bytes", len(key))
		}
		present := true
		for _, p := range defaultDedup {
			if _, ok := lookup(fields, p); !ok {
				present = false
			}
		}
		if (key == "sha256:SUM") == present {
			t.Fatalf("key %q with every field present = %v", key, present)
		}
	})
}
