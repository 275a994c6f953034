package receiver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/store"
)

// fuzzParseSeeds seed FuzzParse and FuzzDecodeMatchesOracle.
var fuzzParseSeeds = []string{
	`{"event":"batch.completed","batch_id":"b_1","status":"completed","total_requested":3,"total_found":2,"total_not_found":1,"completed_at":"2026-11-22T10:00:00Z"}`,
	`{"event":"batch.completed","batch_id":"../x","status":"completed"}`,
	`{"event":"batch.completed","batch_id":"b","status":"failed","status":"completed"}`,
	`{"event":"batch.started","batch_id":"b_2"}`,
	`{"event":"batch.completed","batch_id":"b","status":"partial","total_found":-1}`,
	`{"a":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}`,
	"\xef\xbb\xbf{}",
	`{"event":"batch.completed","batch_id":"b","ſtatus":"failed","status":"completed"}`,
}

// FuzzParse: Parse never panics, and whatever it accepts obeys the rules:
// valid JSON without a BOM, an event and a safe batch_id (a directory
// name that cannot leave the export root), and for batch.completed one of
// the four statuses and non-negative counters.
func FuzzParse(f *testing.F) {
	for _, seed := range fuzzParseSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := Parse(body)
		if err != nil {
			return
		}
		if !json.Valid(body) || bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
			t.Fatalf("accepted a body that is not strict JSON: %q", body)
		}
		if n.Event == "" {
			t.Fatalf("accepted without an event: %q", body)
		}
		if err := store.CheckBatchID(n.BatchID); err != nil || strings.ContainsAny(n.BatchID, "/\\\x00") || strings.HasPrefix(n.BatchID, ".") {
			t.Fatalf("accepted an unsafe batch_id %q", n.BatchID)
		}
		if n.Event != EventCompleted {
			return
		}
		if !finalStatuses[n.Status] {
			t.Fatalf("accepted status %q", n.Status)
		}
		for _, c := range []*int64{n.TotalRequested, n.TotalFound, n.TotalNotFound} {
			if c != nil && *c < 0 {
				t.Fatalf("accepted a negative counter: %q", body)
			}
		}
	})
}
