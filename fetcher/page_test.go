package fetcher_test

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/fetcher"
)

func TestParsePage(t *testing.T) {
	const none = "\x00none" // want.next: the page is the last one
	tests := []struct {
		name         string
		body         string
		resultsField string
		next         string   // none = nil
		items        []string // exact bytes of each item
	}{
		{
			name:  "string cursor, one array",
			body:  `{"next_cursor":"c2","results":[{"cpf":"1"},{"cpf":"2"}]}`,
			next:  "c2",
			items: []string{`{"cpf":"1"}`, `{"cpf":"2"}`},
		},
		{
			name:  "null cursor",
			body:  `{"next_cursor":null,"results":[{"cpf":"1"}]}`,
			next:  none,
			items: []string{`{"cpf":"1"}`},
		},
		{
			name:  "null cursor with whitespace around",
			body:  "{ \"next_cursor\" :\n null \t, \"data\" : [ 1 ] }",
			next:  none,
			items: []string{`1`},
		},
		{
			name:  "cursor kept verbatim, escapes decoded",
			body:  `{"next_cursor":"a b/c+d=\u00e9","data":[]}`,
			next:  "a b/c+d=é",
			items: []string{},
		},
		{
			name:  "the one array member under any name, other members ignored",
			body:  `{"status":"completed","count":2,"meta":{"x":[1,2]},"next_cursor":null,"profiles":[{"a":1},{"a":2}]}`,
			next:  none,
			items: []string{`{"a":1}`, `{"a":2}`},
		},
		{
			name:  "empty array (a failed batch)",
			body:  `{"next_cursor":null,"results":[]}`,
			next:  none,
			items: []string{},
		},
		{
			name:         "RESULTS_FIELD picks among several arrays",
			body:         `{"next_cursor":"n","warnings":["w"],"items":[{"i":1}],"errors":[]}`,
			resultsField: "items",
			next:         "n",
			items:        []string{`{"i":1}`},
		},
		{
			name:         "RESULTS_FIELD naming an empty array",
			body:         `{"next_cursor":null,"items":[],"other":[1]}`,
			resultsField: "items",
			next:         none,
			items:        []string{},
		},
		{
			name: "items compacted",
			body: "{\"next_cursor\":null,\"results\":[ {\"cpf\" : \"123\",\n  \"profile\" : { \"name\" : \"Ana  Maria\" , \"tags\" : [ 1 , 2 ] } } ,\n" +
				"\t\"a string with  spaces\"\r\n, 7 , null , [ ] ]}",
			next: none,
			items: []string{
				`{"cpf":"123","profile":{"name":"Ana  Maria","tags":[1,2]}}`,
				`"a string with  spaces"`,
				`7`,
				`null`,
				`[]`,
			},
		},
		{
			name:  "order preserved",
			body:  `{"next_cursor":null,"r":[{"n":5},{"n":1},{"n":4},{"n":2},{"n":3},{"n":1}]}`,
			next:  none,
			items: []string{`{"n":5}`, `{"n":1}`, `{"n":4}`, `{"n":2}`, `{"n":3}`, `{"n":1}`},
		},
		{
			name:  "non-ASCII and escapes preserved byte for byte",
			body:  `{"next_cursor":null,"r":[{"nome":"João Ñandú 😀","esc":"\u00e9\n\"q\"","html":"<a>&amp;","ls":"x` + "\u2028" + `y"}]}`,
			next:  none,
			items: []string{`{"nome":"João Ñandú 😀","esc":"\u00e9\n\"q\"","html":"<a>&amp;","ls":"x` + "\u2028" + `y"}`},
		},
		{
			name:  "numbers kept as written",
			body:  `{"next_cursor":null,"r":[1.50, 1e3, 12345678901234567890123]}`,
			next:  none,
			items: []string{`1.50`, `1e3`, `12345678901234567890123`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := fetcher.ParsePage([]byte(tt.body), tt.resultsField)
			if err != nil {
				t.Fatalf("ParsePage: %v", err)
			}
			switch {
			case tt.next == none && p.Next != nil:
				t.Errorf("Next = %q, want nil", *p.Next)
			case tt.next != none && p.Next == nil:
				t.Errorf("Next = nil, want %q", tt.next)
			case tt.next != none && *p.Next != tt.next:
				t.Errorf("Next = %q, want %q", *p.Next, tt.next)
			}
			if len(p.Items) != len(tt.items) {
				t.Fatalf("got %d items %q, want %d", len(p.Items), p.Items, len(tt.items))
			}
			for i, want := range tt.items {
				if string(p.Items[i]) != want {
					t.Errorf("item %d = %q, want %q", i, p.Items[i], want)
				}
			}
		})
	}
}

func TestParsePageErrors(t *testing.T) {
	tests := []struct {
		name         string
		body         string
		resultsField string
		mention      string // the error must contain it, when set
	}{
		{name: "empty body", body: ``},
		{name: "not JSON", body: `<html>oops</html>`},
		{name: "top-level array", body: `[{"next_cursor":null}]`},
		{name: "top-level null", body: `null`},
		{name: "truncated", body: `{"next_cursor":null,"results":[{"a":1}`},
		{name: "next_cursor missing", body: `{"results":[]}`, mention: "next_cursor"},
		{name: "next_cursor empty string", body: `{"next_cursor":"","results":[]}`, mention: "next_cursor"},
		{name: "next_cursor number", body: `{"next_cursor":2,"results":[]}`, mention: "next_cursor"},
		{name: "next_cursor bool", body: `{"next_cursor":false,"results":[]}`, mention: "next_cursor"},
		{name: "next_cursor object", body: `{"next_cursor":{"after":"x"},"results":[]}`, mention: "next_cursor"},
		{name: "no array member", body: `{"next_cursor":null,"count":0,"results":{"a":1}}`, mention: "BATCHHOOK_RESULTS_FIELD"},
		{name: "several array members", body: `{"next_cursor":null,"results":[1],"warnings":[]}`, mention: "BATCHHOOK_RESULTS_FIELD"},
		{
			name: "RESULTS_FIELD absent", body: `{"next_cursor":null,"results":[1]}`,
			resultsField: "items", mention: "BATCHHOOK_RESULTS_FIELD",
		},
		{
			name: "RESULTS_FIELD names an object", body: `{"next_cursor":null,"items":{"a":[1]},"other":[1]}`,
			resultsField: "items", mention: "BATCHHOOK_RESULTS_FIELD",
		},
		{
			name: "RESULTS_FIELD names a string", body: `{"next_cursor":null,"items":"[1]"}`,
			resultsField: "items", mention: "BATCHHOOK_RESULTS_FIELD",
		},
		{
			name: "RESULTS_FIELD names null", body: `{"next_cursor":null,"items":null}`,
			resultsField: "items", mention: "BATCHHOOK_RESULTS_FIELD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := fetcher.ParsePage([]byte(tt.body), tt.resultsField)
			if err == nil {
				t.Fatalf("ParsePage(%q) = %+v, want an error", tt.body, p)
			}
			if tt.mention != "" && !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %s", err, tt.mention)
			}
		})
	}
}

// BenchmarkParsePage decodes a 100-item page shaped like the simulator's.
//
//	go test -run XXX -bench BenchmarkParsePage -benchmem ./fetcher/
func BenchmarkParsePage(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"batch_id":"b_1","status":"completed","results":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"cpf":"` + strings.Repeat("1", 11) + `","found":true,"profile":{"name":"Maria da Silva Souza","birth_date":"1980-01-01","mother_name":"Ana Souza","status":"REGULAR"}}`)
	}
	sb.WriteString(`],"next_cursor":"c100"}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fetcher.ParsePage(body, ""); err != nil {
			b.Fatal(err)
		}
	}
}
