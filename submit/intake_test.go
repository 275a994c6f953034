package submit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Fixtures are public example CPFs, checked by hand with the mod-11 rule
// (d = 11 - sum%11, or 0 when that is 10 or 11), not with package cpf:
//
//	529.982.247-25: 5*10+2*9+9*8+9*7+8*6+2*5+2*4+4*3+7*2 = 295, 295%11 = 9, d1 = 2;
//	                5*11+2*10+9*9+9*8+8*7+2*6+2*5+4*4+7*3+2*2 = 347, 347%11 = 6, d2 = 5.
//	111.444.777-35: 10+9+8+4*(7+6+5)+7*(4+3+2) = 162, 162%11 = 8, d1 = 3;
//	                11+10+9+4*(8+7+6)+7*(5+4+3)+3*2 = 204, 204%11 = 6, d2 = 5.
//	123.456.789-09: 1*10+2*9+...+9*2 = 210, 210%11 = 1, d1 = 0;
//	                1*11+2*10+...+9*3+0*2 = 255, 255%11 = 2, d2 = 9.
//	935.411.347-80: 9*10+3*9+5*8+4*7+1*6+1*5+3*4+4*3+7*2 = 234, 234%11 = 3, d1 = 8;
//	                9*11+3*10+5*9+4*8+1*7+1*6+3*5+4*4+7*3+8*2 = 287, 287%11 = 1, d2 = 0.
//
// 123.456.789-00 fails d1 above (wants 09); 111.111.111-11 adds up but is
// all one digit.
const (
	validA = "52998224725"
	validB = "11144477735"
	validC = "12345678909"
	validD = "93541134780"
)

// TestFixtures re-checks the hand computation above with a second,
// independent rendering of the rule, so a typo in a constant fails here.
func TestFixtures(t *testing.T) {
	mod11 := func(s string) bool {
		for n := 9; n <= 10; n++ {
			sum := 0
			for i := 0; i < n; i++ {
				sum += int(s[i]-'0') * (n + 1 - i)
			}
			d := 11 - sum%11
			if d >= 10 {
				d = 0
			}
			if int(s[n]-'0') != d {
				return false
			}
		}
		return true
	}
	for _, s := range []string{validA, validB, validC, validD} {
		if !mod11(s) {
			t.Errorf("fixture %s is not a valid CPF", s)
		}
	}
	if mod11("12345678900") {
		t.Error("12345678900 should fail the check digits")
	}
}

// cpfShaped finds any unmasked CPF, punctuated or not, in output.
var cpfShaped = regexp.MustCompile(`\d{3}\.?\d{3}\.?\d{3}-?\d{2}`)

// assertPrivate fails if out holds a CPF-shaped value or any of secrets.
func assertPrivate(t *testing.T, what, out string, secrets ...string) {
	t.Helper()
	if m := cpfShaped.FindString(out); m != "" {
		t.Errorf("%s discloses %q: %s", what, m, out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s discloses %q: %s", what, s, out)
		}
	}
}

func TestParseIntake(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		opts    IntakeOptions
		want    Intake
		secrets []string // raw values that must not appear in the JSON
	}{{
		name: "lines: both forms, duplicates across forms, blank lines, CRLF, BOM",
		body: "\uFEFF529.982.247-25\r\n\r\n\t \r\n111.444.777-35\r\n \t52998224725\t \r\n12345678909\n\n",
		opts: IntakeOptions{Format: FormatLines},
		want: Intake{CPFs: []string{validA, validB, validC}, Lines: 4, Valid: 3, Duplicates: 1, Invalid: []Invalid{}},
	}, {
		name: "lines: invalid values with line numbers, last line without newline",
		body: "52998224725\n\n123.456.789-00\n111.111.111-11\n5299822472\n12345678900\n935.411.347-80",
		opts: IntakeOptions{Format: FormatLines},
		want: Intake{CPFs: []string{validA, validD}, Lines: 6, Valid: 2, Invalid: []Invalid{
			{3, "***.456.789-**", "check_digits"},
			{4, "***.111.111-**", "repeated_digits"},
			{5, "**********", "format"},
			{6, "***.456.789-**", "check_digits"},
		}},
		secrets: []string{"5299822472"},
	}, {
		name: "lines: empty body",
		opts: IntakeOptions{Format: FormatLines},
		want: Intake{CPFs: []string{}, Invalid: []Invalid{}},
	}, {
		name: "lines: a line longer than the buffer is one invalid value",
		body: validA + "\n" + strings.Repeat("7", 3*maxLine) + "\r\n" + validB + "\n",
		opts: IntakeOptions{Format: FormatLines},
		want: Intake{CPFs: []string{validA, validB}, Lines: 3, Valid: 2, Invalid: []Invalid{
			{2, strings.Repeat("*", 14), "format"},
		}},
	}, {
		name: "lines: at the limit",
		body: validA + "\n" + validB + "\n" + validA + "\n",
		opts: IntakeOptions{Format: FormatLines, MaxCPFs: 2},
		want: Intake{CPFs: []string{validA, validB}, Lines: 3, Valid: 2, Duplicates: 1, Invalid: []Invalid{}},
	}, {
		name: "csv: quoted multi-line fields move line numbers, short and blank records",
		body: "name, CPF ,note\n" +
			"\"Ana\nSilva\",529.982.247-25,x\n" + // record on lines 2-3
			"Bob,123.456.789-00\n" + // line 4
			"\"Carla\n\nSouza\", \"111.111.111-11\"\n" + // lines 5-7
			"short\n" + // line 8: no CPF cell
			"Dan,  ,y\n" + // line 9: blank cell, skipped
			"Eve,52998224725\n", // line 10: duplicate
		opts: IntakeOptions{Format: FormatCSV, Column: " cpf "},
		want: Intake{CPFs: []string{validA}, Lines: 5, Valid: 1, Duplicates: 1, Invalid: []Invalid{
			{4, "***.456.789-**", "check_digits"},
			{5, "***.111.111-**", "repeated_digits"},
			{8, "", "format"},
		}},
		secrets: []string{"Carla", "short"},
	}, {
		name: "csv: BOM before the header, CRLF",
		body: "\uFEFFcpf\r\n111.444.777-35\r\n\r\n11144477735\r\n",
		opts: IntakeOptions{Format: FormatCSV, Column: "CPF"},
		want: Intake{CPFs: []string{validB}, Lines: 2, Valid: 1, Duplicates: 1, Invalid: []Invalid{}},
	}, {
		name: "json: entries by index, empty string is invalid",
		body: "\uFEFF{\n \"cpfs\": [\"529.982.247-25\", \"52998224725\",\n \"123.456.789-00\", \"\", \"111.444.777-35\"]\n}\n",
		opts: IntakeOptions{Format: FormatJSON},
		want: Intake{CPFs: []string{validA, validB}, Lines: 5, Valid: 2, Duplicates: 1, Invalid: []Invalid{
			{3, "***.456.789-**", "check_digits"},
			{4, "", "format"},
		}},
	}, {
		name: "json: empty array",
		body: `{"cpfs":[]}`,
		opts: IntakeOptions{Format: FormatJSON},
		want: Intake{CPFs: []string{}, Invalid: []Invalid{}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIntake(strings.NewReader(tt.body), tt.opts)
			if err != nil {
				t.Fatalf("ParseIntake: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), `"invalid":[`) {
				t.Errorf("invalid should marshal as a list: %s", out)
			}
			assertPrivate(t, "intake JSON", string(out), tt.secrets...)
		})
	}
}

func TestParseIntakeErrors(t *testing.T) {
	csvOpts := IntakeOptions{Format: FormatCSV, Column: "cpf"}
	jsonOpts := IntakeOptions{Format: FormatJSON}
	tests := []struct {
		name   string
		body   string
		opts   IntakeOptions
		want   error
		inErr  string   // must appear in the error
		secret []string // must not
	}{
		{"unknown format", validA, IntakeOptions{Format: "52998224725"}, ErrBadBody, "unknown format", nil},
		{"csv without column", "cpf\n" + validA, IntakeOptions{Format: FormatCSV}, ErrBadBody, "column", nil},
		{"csv missing column, body without header", validA + ",Ana\n" + validB + ",Bob\n", csvOpts, ErrBadBody, `"Ana"`, []string{"Bob"}},
		{"csv empty", "", csvOpts, ErrBadBody, "no header", nil},
		{"csv bare quote", "cpf\n" + validA + "\n1114447\"7735\n", csvOpts, ErrBadBody, "line 3", []string{"1114447"}},
		{"csv unterminated quote", "cpf\n\"" + validA + "\n", csvOpts, ErrBadBody, "line", nil},
		{"json empty", "", jsonOpts, ErrBadBody, "line 1", nil},
		{"json array at top", `["` + validA + `"]`, jsonOpts, ErrBadBody, "object", nil},
		{"json null", `null`, jsonOpts, ErrBadBody, "object", nil},
		{"json unknown field", "{\"cpfs\":[],\n\"" + validA + "\":1}", jsonOpts, ErrBadBody, "line 2", nil},
		{"json key in other case", `{"CPFS":[]}`, jsonOpts, ErrBadBody, "unknown", nil},
		{"json repeated key", `{"cpfs":[],"cpfs":[]}`, jsonOpts, ErrBadBody, "repeated", nil},
		{"json missing cpfs", `{}`, jsonOpts, ErrBadBody, "missing", nil},
		{"json cpfs null", `{"cpfs":null}`, jsonOpts, ErrBadBody, "array", nil},
		{"json cpfs string", `{"cpfs":"` + validA + `"}`, jsonOpts, ErrBadBody, "array", nil},
		{"json number entry", `{"cpfs":["` + validA + `", 52998224725]}`, jsonOpts, ErrBadBody, "entry 2", nil},
		{"json null entry", `{"cpfs":[null]}`, jsonOpts, ErrBadBody, "entry 1", nil},
		{"json syntax", "{\"cpfs\":[\n\"" + validA + "\" \"" + validB + "\"]}", jsonOpts, ErrBadBody, "line 2", nil},
		{"json truncated", `{"cpfs":["` + validA + `",`, jsonOpts, ErrBadBody, "ends early", nil},
		{"json trailing object", `{"cpfs":[]} {}`, jsonOpts, ErrBadBody, "after", nil},
		{"json trailing garbage", "{\"cpfs\":[]}\n" + validA, jsonOpts, ErrBadBody, "after", nil},
		{"too many", validA + "\n" + validB + "\n" + validC + "\n" + validA + "\n", IntakeOptions{Format: FormatLines, MaxCPFs: 2}, ErrTooMany, "3 valid CPFs, limit 2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIntake(strings.NewReader(tt.body), tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %+v, %v; want %v", got, err, tt.want)
			}
			if got != nil {
				t.Errorf("got an intake with the error: %+v", got)
			}
			if !strings.Contains(err.Error(), tt.inErr) {
				t.Errorf("error %q should mention %q", err, tt.inErr)
			}
			assertPrivate(t, "error", err.Error(), tt.secret...)
		})
	}
}

// errReader fails after its data, as http.MaxBytesReader does.
type errReader struct{ data string }

var errLimit = errors.New("body too large")

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errLimit
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestParseIntakeReadError(t *testing.T) {
	for _, f := range []Format{FormatLines, FormatCSV, FormatJSON} {
		_, err := ParseIntake(&errReader{data: "cpf\n" + validA + "\n"}, IntakeOptions{Format: f, Column: "cpf"})
		if !errors.Is(err, errLimit) || errors.Is(err, ErrBadBody) {
			t.Errorf("%s: got %v, want the reader's error unchanged", f, err)
		}
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		n, size int
		want    []int // chunk lengths
	}{
		{0, 1000, nil},
		{1, 1000, []int{1}},
		{1000, 1000, []int{1000}},
		{1001, 1000, []int{1000, 1}},
		{2500, 1000, []int{1000, 1000, 500}},
		{3, 1, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d by %d", tt.n, tt.size), func(t *testing.T) {
			in := make([]string, tt.n)
			for i := range in {
				in[i] = fmt.Sprintf("%011d", i)
			}
			got := Chunks(in, tt.size)
			var sizes []int
			var joined []string
			for _, c := range got {
				sizes = append(sizes, len(c))
				joined = append(joined, c...)
				if cap(c) != len(c) {
					t.Errorf("chunk cap %d > len %d: appending would overwrite the next", cap(c), len(c))
				}
			}
			if !reflect.DeepEqual(sizes, tt.want) {
				t.Errorf("sizes %v, want %v", sizes, tt.want)
			}
			if len(joined) != len(in) || (len(in) > 0 && !reflect.DeepEqual(joined, in)) {
				t.Errorf("chunks do not rejoin to the input in order")
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("Chunks(_, 0) should panic")
		}
	}()
	Chunks([]string{validA}, 0)
}
