package receiver

import (
	"bytes"
	"encoding/json"
)

// The strict decoder: one pass over a signed body, no reflection, that
// accepts exactly what encoding/json's Decoder accepts as one JSON object
// (RFC 8259; whitespace is the four JSON bytes; invalid UTF-8 inside a
// string is accepted, as encoding/json does) and refuses, in the order they
// appear, what a strict reader must: nesting deeper than maxDepth and keys
// repeated exactly or up to case (encoding/json matches keys up to Unicode
// simple folding, so "Batch_ID" or "ſtatus" would otherwise shadow
// "batch_id" or "status" for another reader of the same signed bytes).
// It replaced a json.Decoder token walk followed by json.Unmarshal into a
// map, a sixth of the ack path's CPU; that implementation is kept as the
// test oracle (validate_oracle_test.go) and a fuzz target holds the two
// equal.
//
// Keys and members are spans of the body, not slices: a slice stored in a
// structure reached through a pointer escapes to the heap, and a plain
// notification is decoded without allocating.

// span is a range of the body.
type span struct{ start, end int32 }

// member is one top-level member of a decoded object: its key as written
// (quotes included) and its value's JSON text.
type member struct {
	key, raw span
	// plain: the key has no escape and is ASCII, so its bytes are its name.
	plain bool
}

// Reasons of a refused body (the 400 reply and the quarantine show them).
var (
	errBOM       = invalid("body starts with a byte order mark")
	errNotJSON   = invalid("body is not JSON")
	errNotObject = invalid("body is not a JSON object")
	errTrailing  = invalid("body has data after the JSON object")
	errTooDeep   = invalid("body is nested deeper than %d levels", maxDepth)
)

// linearKeys is how many keys of one object are compared pairwise before
// the object switches to a map of folded keys: a notification has seven,
// and a hostile body with thousands must not cost quadratic time. An
// object switches early when the stack of keys (all open objects') is full.
const (
	linearKeys = 32
	keyStack   = 64
)

// folded is a key in the form keys are compared in: the name itself when
// it is ASCII (compared up to ASCII case), else foldKey's, which has no
// lower-case ASCII letter, so the same comparison is exact on it. A plain
// key's form is its span (fold < 0); any other's is in scanner.folds.
type folded struct {
	name span
	fold int32
}

// scanner is one decode: the position in the body, and the stack of the
// folded keys of the objects being scanned, each object's above its
// parent's.
type scanner struct {
	data  []byte
	pos   int
	keys  [keyStack]folded
	nkeys int
	folds [][]byte // allocated only for keys with an escape or non-ASCII
}

// scanObjectMembers decodes body strictly and appends its top-level
// members to top (which the caller may back with an array of its own).
func scanObjectMembers(body []byte, top []member) ([]member, error) {
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		return nil, errBOM
	}
	if int64(len(body)) > 1<<31-1 {
		return nil, errNotJSON // spans are int32; MAX_BODY_BYTES is at most 16 MiB
	}
	s := scanner{data: body}
	s.skipSpace()
	if s.pos == len(s.data) {
		return nil, errNotJSON
	}
	if s.data[s.pos] != '{' {
		return nil, s.notObject()
	}
	s.pos++
	top, err := s.object(1, top)
	if err != nil {
		return nil, err
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return nil, errTrailing
	}
	return top, nil
}

// name returns a member's name, unescaped by encoding/json when the key is
// not plain, so that invalid UTF-8 and lone surrogates become U+FFFD as
// before. It allocates for such keys only.
func (m member) name(body []byte) []byte {
	q := body[m.key.start:m.key.end]
	if m.plain {
		return q[1 : len(q)-1]
	}
	var k string
	if json.Unmarshal(q, &k) != nil {
		return nil // cannot happen: the scanner validated the key
	}
	return []byte(k)
}

// value returns a member's JSON text.
func (m member) value(body []byte) []byte { return body[m.raw.start:m.raw.end] }

// notObject tells apart a body that starts with some other JSON value
// (not an object) from one that is not JSON at all, as encoding/json's
// Decoder.Token does: only the first value counts, whatever follows it.
func (s *scanner) notObject() error {
	var err error
	switch c := s.data[s.pos]; {
	case c == '[':
		return errNotObject
	case c == '"':
		_, err = s.str()
	case c == '-' || isDigit(c):
		err = s.number()
	case c == 't' || c == 'f' || c == 'n':
		err = s.literal()
	default:
		return errNotJSON
	}
	if err != nil {
		return err
	}
	return errNotObject
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// object scans the members of an object whose '{' is consumed, at nesting
// level depth (the body's object is 1); top gets the body's members.
func (s *scanner) object(depth int, top []member) ([]member, error) {
	base := s.nkeys
	top, err := s.members(depth, base, top)
	s.nkeys = base
	return top, err
}

// members scans an object's members; their keys go on the stack above base.
func (s *scanner) members(depth, base int, top []member) ([]member, error) {
	var seen map[string]bool // set once the object outgrows the stack
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return top, nil
	}
	for {
		if s.pos == len(s.data) || s.data[s.pos] != '"' {
			return top, errNotJSON
		}
		start := s.pos
		plain, err := s.str()
		if err != nil {
			return top, err
		}
		m := member{key: span{int32(start), int32(s.pos)}, plain: plain}
		// The key is checked as soon as it is read, before what follows it,
		// so the first fault in the body is the one reported.
		if seen, err = s.checkKey(m, base, seen); err != nil {
			return top, err
		}
		s.skipSpace()
		if s.pos == len(s.data) || s.data[s.pos] != ':' {
			return top, errNotJSON
		}
		s.pos++
		s.skipSpace()
		valStart := s.pos
		if err := s.value(depth); err != nil {
			return top, err
		}
		if depth == 1 {
			m.raw = span{int32(valStart), int32(s.pos)}
			top = append(top, m)
		}
		s.skipSpace()
		if s.pos == len(s.data) {
			return top, errNotJSON
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return top, nil
		default:
			return top, errNotJSON
		}
	}
}

// checkKey refuses m's key when the object (keys above base, or seen once
// it has one) has it already up to folding, and records it.
func (s *scanner) checkKey(m member, base int, seen map[string]bool) (map[string]bool, error) {
	f := s.fold(m)
	form := s.form(f)
	if seen != nil {
		k := string(asciiUpper(form))
		if seen[k] {
			return seen, duplicateKey(m.name(s.data))
		}
		seen[k] = true
		return seen, nil
	}
	for _, k := range s.keys[base:s.nkeys] {
		if asciiEqualFold(s.form(k), form) {
			return nil, duplicateKey(m.name(s.data))
		}
	}
	if s.nkeys-base < linearKeys && s.nkeys < keyStack {
		s.keys[s.nkeys] = f
		s.nkeys++
		return nil, nil
	}
	seen = make(map[string]bool, 2*linearKeys)
	for _, k := range s.keys[base:s.nkeys] {
		seen[string(asciiUpper(s.form(k)))] = true
	}
	seen[string(asciiUpper(form))] = true
	s.nkeys = base
	return seen, nil
}

// fold returns the folded form of m's key.
func (s *scanner) fold(m member) folded {
	if m.plain {
		return folded{name: span{m.key.start + 1, m.key.end - 1}, fold: -1}
	}
	name := m.name(s.data)
	if !isASCII(name) {
		name = []byte(foldKey(string(name)))
	}
	s.folds = append(s.folds, name)
	return folded{fold: int32(len(s.folds) - 1)}
}

func (s *scanner) form(f folded) []byte {
	if f.fold < 0 {
		return s.data[f.name.start:f.name.end]
	}
	return s.folds[f.fold]
}

func duplicateKey(name []byte) error {
	return invalid("key %q appears more than once (exactly or up to case)", truncate(string(name)))
}

// value scans one value of a member or an element at nesting level depth.
func (s *scanner) value(depth int) error {
	if s.pos == len(s.data) {
		return errNotJSON
	}
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return errTooDeep
		}
		s.pos++
		if c == '{' {
			_, err := s.object(depth+1, nil)
			return err
		}
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || isDigit(c):
		return s.number()
	case c == 't' || c == 'f' || c == 'n':
		return s.literal()
	default:
		return errNotJSON
	}
}

// array scans the elements of an array whose '[' is consumed.
func (s *scanner) array(depth int) error {
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos == len(s.data) {
			return errNotJSON
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case ']':
			s.pos++
			return nil
		default:
			return errNotJSON
		}
	}
}

// str scans a string at its opening quote. plain reports that it has
// neither an escape nor a byte outside ASCII, so its bytes are its value.
// Control characters are refused and escapes validated (RFC 8259); other
// bytes, invalid UTF-8 included, are accepted as encoding/json does.
func (s *scanner) str() (plain bool, err error) {
	plain = true
	s.pos++
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return plain, nil
		case c < 0x20:
			return false, errNotJSON
		case c >= 0x80:
			plain = false
			s.pos++
		case c == '\\':
			plain = false
			if err := s.escape(); err != nil {
				return false, err
			}
		default:
			s.pos++
		}
	}
	return false, errNotJSON
}

// escape validates the escape sequence at s.pos (its backslash).
func (s *scanner) escape() error {
	if s.pos+1 >= len(s.data) {
		return errNotJSON
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return nil
	case 'u':
		if s.pos+6 > len(s.data) {
			return errNotJSON
		}
		for _, h := range s.data[s.pos+2 : s.pos+6] {
			if !isHex(h) {
				return errNotJSON
			}
		}
		s.pos += 6
		return nil
	default:
		return errNotJSON
	}
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and stops
// at the first byte that cannot continue it.
func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos == len(s.data) || !isDigit(s.data[s.pos]):
		return errNotJSON
	case s.data[s.pos] == '0':
		s.pos++
	default:
		s.digits()
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if !s.digits() {
			return errNotJSON
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if !s.digits() {
			return errNotJSON
		}
	}
	return nil
}

// digits consumes a run of digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.data) && isDigit(s.data[s.pos]) {
		s.pos++
	}
	return s.pos > start
}

func (s *scanner) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
			s.pos += len(lit)
			return nil
		}
	}
	return errNotJSON
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// asciiEqualFold compares up to ASCII case, bytes outside ASCII exactly.
func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x != y && upper(x) != upper(y) {
			return false
		}
	}
	return true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func asciiUpper(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = upper(c)
	}
	return out
}
