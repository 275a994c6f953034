package fetcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Page is one page of a batch result: its items, each compact JSON, in the
// provider's order, and the cursor of the next page (nil on the last).
type Page struct {
	Items []json.RawMessage
	Next  *string
}

// ParsePage reads a page. The document shows only next_cursor, so the rule
// is (DECISIONS 6): the page is a JSON object; next_cursor must be present
// and be a non-empty string or null; the items are the member named
// resultsField, or, when resultsField is empty, the page's one array
// member. No array, or several with resultsField empty, is an error that
// names BATCHHOOK_RESULTS_FIELD: silently skipping items would export an
// incomplete batch.
func ParsePage(body []byte, resultsField string) (*Page, error) {
	members, err := objectMembers(body)
	if err != nil {
		// Not a valid object: the decoder says why (a top-level null
		// decodes to no members, and fails on next_cursor below).
		if err := json.Unmarshal(body, &members); err != nil {
			return nil, fmt.Errorf("page is not a JSON object: %w", err)
		}
	}
	rawNext, ok := members["next_cursor"]
	if !ok {
		return nil, errors.New("page has no next_cursor member")
	}
	p := &Page{}
	if string(rawNext) != "null" {
		var next string
		if err := json.Unmarshal(rawNext, &next); err != nil {
			return nil, errors.New("next_cursor is neither a string nor null")
		}
		if next == "" {
			return nil, errors.New("next_cursor is an empty string")
		}
		p.Next = &next
	}
	rawItems, err := itemsMember(members, resultsField)
	if err != nil {
		return nil, err
	}
	// The page was validated whole above: the items are split and
	// compacted in one pass, and an item already compact is not copied.
	if p.Items, err = splitArray(rawItems); err != nil {
		return nil, err
	}
	return p, nil
}

func itemsMember(members map[string]json.RawMessage, resultsField string) (json.RawMessage, error) {
	if resultsField != "" {
		raw, ok := members[resultsField]
		if !ok || !isArray(raw) {
			return nil, fmt.Errorf("page has no array member %q (BATCHHOOK_RESULTS_FIELD)", resultsField)
		}
		return raw, nil
	}
	var found json.RawMessage
	count := 0
	for _, raw := range members {
		if isArray(raw) {
			found = raw
			count++
		}
	}
	switch count {
	case 1:
		return found, nil
	case 0:
		return nil, errors.New("page has no array member; set BATCHHOOK_RESULTS_FIELD to the items member")
	default:
		return nil, fmt.Errorf("page has %d array members; set BATCHHOOK_RESULTS_FIELD to the items member", count)
	}
}

func isArray(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}
