// Package submit is batchhook's outgoing side: it submits CPFs to the
// provider for lookup. ParseIntake turns a submission body into CPFs, and
// Service records them as chunks for the admin API; the Submitter sends
// queued chunks within the provider's limits (docs/provider-api.md §8)
// and classifies each answer; the Reconciler polls batches whose
// batch.completed has not come. The body comes from a person, so the
// parser reports every bad line instead of stopping at the first, and
// because CPFs are personal data a rejected value is only ever shown
// through cpf.Mask: never raw in results and never in an error string.
package submit

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/batchhook/batchhook/cpf"
)

// Format is how an intake body is laid out.
type Format string

// The accepted formats.
const (
	FormatLines Format = "lines" // one CPF per line
	FormatCSV   Format = "csv"   // CSV with a header row; the CPFs are in the column named by IntakeOptions.Column
	FormatJSON  Format = "json"  // {"cpfs":["...", ...]}
)

// IntakeOptions configures ParseIntake.
type IntakeOptions struct {
	Format Format
	// Column is the header name of the CPF column (FormatCSV only, required),
	// matched case-insensitively after trimming spaces.
	Column string
	// MaxCPFs rejects the whole body with ErrTooMany when it holds more valid
	// unique CPFs; 0 or less means no limit.
	MaxCPFs int
}

// Invalid is one rejected value.
type Invalid struct {
	Line   int    `json:"line"`   // 1-based body line (CSV: where the record starts); JSON: 1-based array index
	Masked string `json:"masked"` // cpf.Mask of the raw value
	Reason string `json:"reason"` // "format", "repeated_digits" or "check_digits"
}

// Intake is a parsed body.
type Intake struct {
	CPFs       []string  `json:"-"`          // valid, normalised, first occurrence order, no duplicates
	Lines      int       `json:"lines"`      // values seen: non-blank lines, CSV records, JSON entries
	Valid      int       `json:"valid"`      // len(CPFs)
	Duplicates int       `json:"duplicates"` // valid values dropped because their normalised form was already seen
	Invalid    []Invalid `json:"invalid"`    // in line order; never nil, so it marshals as []
}

// ErrTooMany is returned, wrapped with the count and the limit, when a body
// holds more valid unique CPFs than IntakeOptions.MaxCPFs.
var ErrTooMany = errors.New("too many CPFs")

// ErrBadBody is returned, wrapped with the problem and its line, for a body
// that cannot be read as its format at all (malformed CSV or JSON, missing
// column) and for options that name no known format.
var ErrBadBody = errors.New("bad intake body")

// maxLine bounds the memory a single line may take in FormatLines. A CPF
// line is at most a few dozen bytes, so a longer one is reported as an
// invalid "format" value (masked whole) and the rest of the body still parses.
const maxLine = 64 << 10

// ParseIntake reads a whole body and sorts its values into valid CPFs,
// duplicates and invalid lines. It returns ErrBadBody or ErrTooMany for a
// body to refuse as a whole; any other error comes from r, wrapped, so a
// caller can still find e.g. *http.MaxBytesError. The caller bounds the body
// size: CSV fields and JSON strings are held in memory whole.
func ParseIntake(r io.Reader, o IntakeOptions) (*Intake, error) {
	switch o.Format {
	case FormatLines, FormatJSON:
	case FormatCSV:
		if strings.TrimSpace(o.Column) == "" {
			return nil, fmt.Errorf("%w: csv needs a column name", ErrBadBody)
		}
	default:
		// The value is not echoed: it may come from a request.
		return nil, fmt.Errorf("%w: unknown format, want lines, csv or json", ErrBadBody)
	}
	br := bufio.NewReaderSize(r, maxLine)
	if p, err := br.Peek(3); bytes.Equal(p, []byte("\uFEFF")) {
		br.Discard(3)
	} else if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read intake body: %w", err)
	}
	c := &collector{in: &Intake{CPFs: []string{}, Invalid: []Invalid{}}, seen: map[string]bool{}}
	var err error
	switch o.Format {
	case FormatLines:
		err = parseLines(br, c)
	case FormatCSV:
		err = parseCSV(br, o.Column, c)
	case FormatJSON:
		err = parseJSON(br, c)
	}
	if err != nil {
		return nil, err
	}
	in := c.in
	in.Valid = len(in.CPFs)
	if o.MaxCPFs > 0 && in.Valid > o.MaxCPFs {
		return nil, fmt.Errorf("%w: %d valid CPFs, limit %d", ErrTooMany, in.Valid, o.MaxCPFs)
	}
	return in, nil
}

// Chunks splits cpfs into consecutive slices of at most size, in order, so a
// batch can be submitted in pieces the provider accepts. Each chunk's
// capacity is its length, so appending to one cannot overwrite the next.
// It panics if size < 1: the caller chooses size, not the body.
func Chunks(cpfs []string, size int) [][]string {
	if size < 1 {
		panic("submit: Chunks wants size >= 1")
	}
	var out [][]string
	for i := 0; i < len(cpfs); i += size {
		j := min(i+size, len(cpfs))
		out = append(out, cpfs[i:j:j])
	}
	return out
}

// collector is what the three formats have in common: every non-blank value
// goes through add, in body order.
type collector struct {
	in   *Intake
	seen map[string]bool
}

func (c *collector) add(line int, raw string) {
	n, err := cpf.Normalize(raw)
	if err != nil {
		c.reject(line, raw, reason(err))
		return
	}
	c.in.Lines++
	switch {
	case c.seen[n]:
		c.in.Duplicates++
	default:
		c.seen[n] = true
		c.in.CPFs = append(c.in.CPFs, n)
	}
}

// reject counts a value seen and records it as invalid, masked.
func (c *collector) reject(line int, raw, why string) {
	c.in.Lines++
	c.in.Invalid = append(c.in.Invalid, Invalid{Line: line, Masked: cpf.Mask(raw), Reason: why})
}

func reason(err error) string {
	switch {
	case errors.Is(err, cpf.ErrRepeated):
		return "repeated_digits"
	case errors.Is(err, cpf.ErrCheckDigits):
		return "check_digits"
	default:
		return "format"
	}
}

func parseLines(br *bufio.Reader, c *collector) error {
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			masked := string(b) // masked whole by cpf.Mask: too long to be a CPF
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			c.reject(line, masked, "format")
		} else if s := strings.Trim(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), " \t"); s != "" {
			c.add(line, s)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read intake line %d: %w", line, err)
		}
	}
}

func parseCSV(r io.Reader, column string, c *collector) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("%w: csv has no header row", ErrBadBody)
	}
	if err != nil {
		return csvError(err)
	}
	col := -1
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(column)) {
			col = i
			break
		}
	}
	if col < 0 {
		line, _ := cr.FieldPos(0)
		return fmt.Errorf("%w: csv header on line %d has no column %q, found %s",
			ErrBadBody, line, strings.TrimSpace(column), headerNames(header))
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(err)
		}
		line, _ := cr.FieldPos(0)
		switch {
		case col >= len(rec):
			c.reject(line, "", "format")
		case strings.TrimSpace(rec[col]) != "":
			c.add(line, rec[col])
		}
	}
}

// csvError keeps the line and csv's own sentinel (bare quote, ...) but not
// the text around it, which may hold a CPF.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: csv line %d: %v", ErrBadBody, pe.Line, pe.Err)
	}
	return fmt.Errorf("read intake csv: %w", err)
}

// headerNames lists a header for an error message. A body sent without a
// header has a CPF as its first "name", so any name with a digit in it is
// masked, and a long header is cut short.
func headerNames(header []string) string {
	var names []string
	for i, h := range header {
		if i == 10 {
			names = append(names, "...")
			break
		}
		h = strings.TrimSpace(h)
		if strings.ContainsAny(h, "0123456789") {
			h = cpf.Mask(h)
		}
		names = append(names, fmt.Sprintf("%q", h))
	}
	return "[" + strings.Join(names, " ") + "]"
}

// parseJSON walks the tokens of {"cpfs":[...]} instead of decoding into a
// struct with DisallowUnknownFields: it is as strict (and stricter: the key
// must be spelt exactly, once; entries must be strings, not null), and the
// errors are our own, naming a line but never a key or value the client sent.
// An empty string entry is an invalid value, not a blank line: a client sent it.
func parseJSON(r io.Reader, c *collector) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read intake json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	bad := func(problem string) error {
		return fmt.Errorf("%w: %s at line %d", ErrBadBody, problem, 1+bytes.Count(body[:dec.InputOffset()], []byte("\n")))
	}
	next := func() (json.Token, error) {
		t, err := dec.Token()
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%w: malformed json at line %d", ErrBadBody, 1+bytes.Count(body[:min(se.Offset, int64(len(body)))], []byte("\n")))
		case err != nil:
			return nil, bad("json ends early")
		}
		return t, nil
	}
	t, err := next()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return bad("want a json object")
	}
	found := false
	for dec.More() {
		if t, err = next(); err != nil {
			return err
		}
		if t != "cpfs" || found {
			return bad(`unknown or repeated field, want only "cpfs"`)
		}
		found = true
		if t, err = next(); err != nil {
			return err
		}
		if t != json.Delim('[') {
			return bad("cpfs must be an array of strings")
		}
		for i := 1; dec.More(); i++ {
			if t, err = next(); err != nil {
				return err
			}
			s, ok := t.(string)
			if !ok {
				return bad(fmt.Sprintf("cpfs entry %d is not a string", i))
			}
			c.add(i, s)
		}
		if _, err = next(); err != nil { // ']'
			return err
		}
	}
	if _, err = next(); err != nil { // '}'
		return err
	}
	if !found {
		return bad(`missing field "cpfs"`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("data after the json object")
	}
	return nil
}
