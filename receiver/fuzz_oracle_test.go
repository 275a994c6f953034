package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// MatchesOracle lets the table tests of receiver_test hold every body
// they use to the oracle too.
var MatchesOracle = matchesOracle

// matchesOracle reports how the scanner and the encoding/json decoder it
// replaced (validate_oracle_test.go) disagree on body: accept or reject,
// the reason, the member names and raw member bytes, and Parse's result.
func matchesOracle(body []byte) error {
	want, wantErr := oracleDecodeObject(body)
	got, gotErr := decodeObject(body)
	if errText(gotErr) != errText(wantErr) {
		return fmt.Errorf("decodeObject(%q): error %q, oracle %q", body, errText(gotErr), errText(wantErr))
	}
	if gotErr != nil && !errors.Is(gotErr, errInvalid) {
		return fmt.Errorf("decodeObject(%q): error %v is not errInvalid", body, gotErr)
	}
	if len(got) != len(want) {
		return fmt.Errorf("decodeObject(%q): %d members, oracle %d", body, len(got), len(want))
	}
	for name, raw := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, raw) {
			return fmt.Errorf("decodeObject(%q): member %q = %q (present %v), oracle %q", body, name, g, ok, raw)
		}
	}
	wantN, wantErr := oracleParse(body)
	gotN, gotErr := Parse(body)
	if errText(gotErr) != errText(wantErr) {
		return fmt.Errorf("Parse(%q): error %q, oracle %q", body, errText(gotErr), errText(wantErr))
	}
	if !reflect.DeepEqual(gotN, wantN) {
		return fmt.Errorf("Parse(%q) = %+v, oracle %+v", body, gotN, wantN)
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// hostileSeeds are bodies at the edges of the grammar and of the strict
// rules, where a hand-written scanner most easily parts from encoding/json.
var hostileSeeds = []string{
	"", " ", "{", "}", "[", "]", "{}", " {} ", "\t{\r\n}\n", "{}\f", "\v{}", "\u00a0{}", "{}\x00",
	"\xef\xbb\xbf{}", " \xef\xbb\xbf{}", "\xef\xbb", "{}\xef\xbb\xbf",
	`{"a":1}x`, `{"a":1}{}`, `{"a":1} ,`, `{"a":1}]`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":}`, `{"a"}`,
	`{"a":1 "b":2}`, `{"a":1,,"b":2}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":[}`, `{"a":{]}`, `{1:2}`,
	`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":.5}`, `{"a":+1}`, `{"a":-0}`, `{"a":0.0e-0}`,
	`{"a":1E+10}`, `{"a":-01}`, `{"a":00}`, `{"a":1.5.5}`, `{"a":0x10}`, `{"a":Infinity}`, `{"a":NaN}`,
	"01", "1.", "-", "1e", "1e5x", "0x", "-x", `"abc"`, `"abc`, `"a` + "\x01" + `"`, "true", "truex", "tru", "nul",
	"null", "false", "[1", "x", `'a'`, `{'a':1}`,
	`{"a":true}`, `{"a":tru}`, `{"a":truex}`, `{"a":nulll}`, `{"a":FALSE}`,
	`{"a":"\u00"}`, `{"a":"\uZZZZ"}`, `{"a":"\x"}`, `{"a":"\/\b\f\n\r\t\"\\"}`, `{"a":"` + "\t" + `"}`, `{"a":"` + "\x7f" + `"}`, `{"a":"` + "\x1f" + `"}`, `{"` + "\x1f" + `":1}`, `{"a":" "}`,
	`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":"\ud83d\ude00"}`, `{"\ud800":1,"\udfff":2}`,
	`{"a":"` + "\xff\xfe" + `"}`, `{"` + "\xff" + `":1,"` + "\xfe" + `":2}`, `{"` + "\xff" + `":1,"\ufffd":2}`,
	`{"a":1,"A":2}`, `{"a":1,"\u0041":2}`, `{"batch_id":1,"batch\u005fid":2}`, `{"k":1,"\u212a":2}`, `{"K":1,"` + "\u212a" + `":2}`,
	`{"s":1,"` + "\u017f" + `":2}`, `{"status":1,"` + "\u017f" + `tatus":2}`, `{"ſ":1,"ſ":2}`, `{"ß":1,"ẞ":2}`, `{"i":1,"İ":2,"ı":3}`,
	`{"a":{"b":1,"B":2}}`, `{"a":{"b":1},"b":{"b":1}}`, `{"a":[{"x":1},{"x":2}]}`, `{"a":1,"a":x}`, `{"a":1,"a"`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":01}`,
	`{"event":"batch.completed","batch_id":"b\u002d1","status":"compl\u0065ted","completed_at":"2026-11-22T10:00:00\u005a"}`,
	`{"event":"batch.completed","batch_id":"b-1","status":"completed","completed_at":"` + "\xff" + `"}`,
	`{"event":"batch.completed","batch_id":"b-1","status":"completed","total_found":1 , "total_requested" : 2 }`,
	`{"event":"batch.completed","batch_id":"b-1","status":"completed","total_found":-0}`,
	`{"event":"batch.completed","batch_id":"b-1","status":"completed","total_found":00}`,
	`{"event":"batch.started","batch_id":"\u0062"}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":9223372036854775807,"total_found":0}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":9223372036854775808}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":9223372036854775799}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":92233720368547758070}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_requested":18446744073709551616}`,
	`{"event":"batch.completed","batch_id":"b","status":"completed","total_found":1e2,"total_requested":-5}`,
}

// deepSeeds nest arrays and objects around the depth limit.
func deepSeeds() []string {
	var out []string
	for _, d := range []int{15, 16, 17, 18, 100} {
		out = append(out,
			`{"a":`+strings.Repeat("[", d-1)+strings.Repeat("]", d-1)+`}`,
			`{"a":`+strings.Repeat(`{"b":`, d-1)+"1"+strings.Repeat("}", d-1)+`}`,
			`{"a":`+strings.Repeat("[", d-1)+`x`,
			`{"a":`+strings.Repeat(`[{"c":`, d/2)+"0",
		)
	}
	var many strings.Builder
	many.WriteString("{")
	for i := range 200 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	out = append(out, many.String()+`"K17":0}`, many.String()+`"k1000":0}`, many.String()+`"K17"`)
	// A duplicate of the key that makes an object leave the pairwise
	// comparison (the 33rd), and of the one that fills the stack of keys
	// (objects nested, 30 keys each).
	keys := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `"%s%d":%d,`, prefix, i, i)
		}
		return b.String()
	}
	out = append(out,
		"{"+keys("k", 33)+`"K32":0}`,
		"{"+keys("k", 33)+`"k0":0}`,
		"{"+keys("a", 30)+`"b":{`+keys("c", 30)+`"d":{`+keys("e", 10)+`"E9":0}}}`,
		"{"+keys("a", 30)+`"b":{`+keys("c", 30)+`"d":{`+keys("e", 10)+`"E3":0}}}`,
		"{"+keys("a", 30)+`"b":{`+keys("c", 30)+`"d":{`+keys("e", 10)+`"x":0}},"A29":1}`,
	)
	return out
}

// corpusSeeds reads a fuzz target's corpus in testdata (the []byte form).
func corpusSeeds(f *testing.F, target string) [][]byte {
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					f.Fatalf("%s: %v", p, err)
				}
				out = append(out, []byte(s))
			}
		}
	}
	return out
}

// FuzzDecodeMatchesOracle: the single-pass scanner accepts and refuses
// exactly what the encoding/json decoder it replaced did, with the same
// reason, the same members and the same Parse result. Its corpus in
// testdata holds every body the receiver's tests decode.
func FuzzDecodeMatchesOracle(f *testing.F) {
	for _, s := range append(append(append([]string{}, fuzzParseSeeds...), hostileSeeds...), deepSeeds()...) {
		f.Add([]byte(s))
	}
	for _, b := range corpusSeeds(f, "FuzzParse") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := matchesOracle(body); err != nil {
			t.Fatal(err)
		}
	})
}
