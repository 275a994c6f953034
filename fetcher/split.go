package fetcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errNotArray is splitArray's answer to anything but a JSON array.
var errNotArray = errors.New("items are not a JSON array")

// splitArray returns the elements of the JSON array raw, each compact (as
// json.Compact makes it: insignificant space dropped, every other byte
// kept). raw must already be known to be valid JSON: ParsePage has it from
// json.Unmarshal, which checked the whole page. So this only finds where
// each element ends, in one pass, instead of validating the items twice
// more (decoding them into []json.RawMessage, then compacting each). An
// element that is already compact, as a provider usually sends it, is a
// slice of raw, not a copy.
func splitArray(raw []byte) ([]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, errNotArray
	}
	items := []json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return items, nil
	}
	for {
		end, spaced, err := valueEnd(raw, i)
		if err != nil {
			return nil, err
		}
		item := json.RawMessage(raw[i:end:end])
		if spaced {
			item = compact(item)
		}
		items = append(items, item)
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return nil, errNotArray
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return items, nil
		default:
			return nil, errNotArray
		}
	}
}

// valueEnd returns the index just past the JSON value starting at raw[i],
// and whether space occurs inside it (outside strings).
func valueEnd(raw []byte, i int) (end int, spaced bool, err error) {
	if i >= len(raw) {
		return 0, false, errNotArray
	}
	switch raw[i] {
	case '"':
		j, err := stringEnd(raw, i)
		return j + 1, false, err
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				if j, err = stringEnd(raw, j); err != nil {
					return 0, false, err
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, spaced, nil
				}
			case ' ', '\t', '\r', '\n':
				spaced = true
			}
		}
		return 0, false, errNotArray
	default: // a number, true, false or null: up to the next delimiter
		j := i
		for j < len(raw) && !isDelim(raw[j]) {
			j++
		}
		return j, false, nil
	}
}

// stringEnd returns the index of the quote closing the string opened at
// raw[i].
func stringEnd(raw []byte, i int) (int, error) {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j, nil
		}
	}
	return 0, errNotArray
}

// compact drops the space outside strings from a valid JSON value.
func compact(v []byte) []byte {
	out := make([]byte, 0, len(v))
	for j := 0; j < len(v); j++ {
		switch c := v[j]; c {
		case ' ', '\t', '\r', '\n':
		case '"':
			k, _ := stringEnd(v, j) // v is valid: the string closes
			out = append(out, v[j:k+1]...)
			j = k
		default:
			out = append(out, c)
		}
	}
	return out
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isDelim(c byte) bool { return c == ',' || c == ']' || c == '}' || isSpace(c) }

// errNotObject is objectMembers' answer to anything but a valid JSON object.
var errNotObject = errors.New("not a JSON object")

// objectMembers returns the members of the JSON object body, as
// json.Unmarshal into a map[string]json.RawMessage would (the last of
// duplicate names wins), after one validating pass (json.Valid) and one
// pass that only finds where each member ends: the decoder's own second
// pass costs as much again as the validation.
func objectMembers(body []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, errNotObject
	}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, errNotObject
	}
	members := make(map[string]json.RawMessage, 4)
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return members, nil
	}
	for {
		keyEnd, err := stringEnd(body, i) // valid JSON: a member starts with its name
		if err != nil {
			return nil, err
		}
		name, err := memberName(body[i : keyEnd+1])
		if err != nil {
			return nil, err
		}
		i = skipSpace(body, keyEnd+1) + 1 // past ':'
		i = skipSpace(body, i)
		end, _, err := valueEnd(body, i)
		if err != nil {
			return nil, err
		}
		members[name] = body[i:end:end]
		i = skipSpace(body, end)
		if i >= len(body) {
			return nil, errNotObject
		}
		if body[i] == '}' {
			return members, nil
		}
		i = skipSpace(body, i+1) // past ','
	}
}

// memberName decodes a quoted member name; most have no escape to decode
// (nor invalid UTF-8, which the decoder replaces).
func memberName(quoted []byte) (string, error) {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	var name string
	if err := json.Unmarshal(quoted, &name); err != nil {
		return "", errNotObject
	}
	return name, nil
}
