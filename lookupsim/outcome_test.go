package lookupsim

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

type decodedItem struct {
	CPF     string `json:"cpf"`
	Result  string `json:"result"`
	Profile *struct {
		Name      string  `json:"name"`
		BirthDate string  `json:"birth_date"`
		Situation *string `json:"situation"`
	} `json:"profile"`
}

var birthDate = regexp.MustCompile(`^(19[4-9][0-9]|200[0-7])-[01][0-9]-[0-3][0-9]$`)

// checkItem checks one item's shape for its kind and returns it decoded.
func checkItem(t *testing.T, raw json.RawMessage) decodedItem {
	t.Helper()
	var it decodedItem
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&it); err != nil {
		t.Fatalf("item %s: %v", raw, err)
	}
	if !validCPF(it.CPF) {
		t.Fatalf("item cpf %q", it.CPF)
	}
	switch it.Result {
	case "found":
		if it.Profile == nil || it.Profile.Name == "" || !birthDate.MatchString(it.Profile.BirthDate) ||
			it.Profile.Situation == nil || *it.Profile.Situation == "" {
			t.Fatalf("found item without a full profile: %s", raw)
		}
	case "incomplete":
		if it.Profile == nil || it.Profile.Name == "" || !birthDate.MatchString(it.Profile.BirthDate) {
			t.Fatalf("incomplete item without a profile: %s", raw)
		}
	case "not_found", "pending":
		if it.Profile != nil {
			t.Fatalf("%s item with a profile: %s", it.Result, raw)
		}
	default:
		t.Fatalf("unknown result %q", it.Result)
	}
	return it
}

type note struct {
	Event          string `json:"event"`
	BatchID        string `json:"batch_id"`
	Status         string `json:"status"`
	TotalRequested int    `json:"total_requested"`
	TotalFound     int    `json:"total_found"`
	TotalNotFound  int    `json:"total_not_found"`
	CompletedAt    string `json:"completed_at"`
}

func TestEachOutcomeAndItsCounters(t *testing.T) {
	clock := newFakeClock()
	s := startSim(t, Options{Outcome: Cycle("completed", "partial", "expired", "failed"), Now: clock.Now})
	cpfs := SampleCPFs(400, 16)
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = submitHTTP(t, s, cpfs)
	}
	wantStatus := []string{"completed", "partial", "expired", "failed"}
	var completedItems []json.RawMessage
	for i, id := range ids {
		waitFinal(t, s, id)
		raw, ok := s.Notification(id)
		if !ok {
			t.Fatalf("%s: no notification", id)
		}
		var n note
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&n); err != nil {
			t.Fatal(err)
		}
		if n.Event != "batch.completed" || n.BatchID != id || n.Status != wantStatus[i] || n.TotalRequested != 400 ||
			n.CompletedAt != "2026-11-22T10:00:00Z" {
			t.Fatalf("notification %s", raw)
		}
		if st, _ := s.Status(id); st != wantStatus[i] {
			t.Fatalf("Status %q", st)
		}
		items, pages := fetchAll(t, s, id, 150)
		results, _ := s.Results(id)
		if len(items) != len(results) {
			t.Fatalf("%s: pages have %d items, Results %d", n.Status, len(items), len(results))
		}
		kinds := map[string]int{}
		for j, raw := range items {
			it := checkItem(t, raw)
			if it.CPF != cpfs[j] {
				t.Fatalf("item %d is %s, want submission order", j, it.CPF)
			}
			kinds[it.Result]++
		}
		if n.TotalFound != kinds["found"]+kinds["incomplete"] || n.TotalNotFound != kinds["not_found"] {
			t.Fatalf("%s: counters %+v, items %v", n.Status, n, kinds)
		}
		switch n.Status {
		case "completed":
			completedItems = items
			if kinds["found"] == 0 || kinds["not_found"] == 0 || kinds["incomplete"]+kinds["pending"] != 0 {
				t.Fatalf("completed: %v", kinds)
			}
		case "partial":
			if kinds["incomplete"] == 0 || kinds["pending"] != 0 {
				t.Fatalf("partial: %v", kinds)
			}
		case "expired":
			if kinds["pending"] == 0 || kinds["incomplete"] != 0 || n.TotalFound+n.TotalNotFound+kinds["pending"] != 400 {
				t.Fatalf("expired: %v", kinds)
			}
		case "failed":
			if len(items) != 0 || len(pages) != 1 || n.TotalFound != 0 || n.TotalNotFound != 0 {
				t.Fatalf("failed: %d items in %d pages, %+v", len(items), len(pages), n)
			}
			want := `{"batch_id":"` + id + `","status":"failed","results":[],"next_cursor":null}`
			if string(pages[0]) != want {
				t.Fatalf("failed page %s", pages[0])
			}
		}
	}
	// found/not_found and the profile depend on the CPF alone: the same
	// CPFs in a later batch give the same items.
	again := submitHTTP(t, s, cpfs) // seq 4: completed again
	waitFinal(t, s, again)
	items, _ := s.Results(again)
	for i := range items {
		if !bytes.Equal(items[i], completedItems[i]) {
			t.Fatalf("item %d differs between batches: %s vs %s", i, items[i], completedItems[i])
		}
	}
}

func TestSmallBatchesStillShowTheirKind(t *testing.T) {
	s := startSim(t, Options{Outcome: Cycle("partial", "expired")})
	for seed := int64(0); seed < 6; seed++ {
		p := submitHTTP(t, s, SampleCPFs(1, seed))
		e := submitHTTP(t, s, SampleCPFs(1, seed))
		for id, want := range map[string]string{p: "incomplete", e: "pending"} {
			waitFinal(t, s, id)
			items, _ := s.Results(id)
			if len(items) != 1 || checkItem(t, items[0]).Result != want {
				t.Fatalf("one-CPF batch: %s, want a %s item", items, want)
			}
		}
	}
}

func TestOutcomeSeesSequenceAndCPFs(t *testing.T) {
	type call struct {
		seq int
		n   int
	}
	calls := make(chan call, 4)
	s := startSim(t, Options{Outcome: func(seq int, cpfs []string) string {
		calls <- call{seq, len(cpfs)}
		return "no-such-status" // served as failed
	}})
	id := submitHTTP(t, s, SampleCPFs(3, 17))
	waitFinal(t, s, id)
	if c := <-calls; c.seq != 0 || c.n != 3 {
		t.Fatalf("Outcome called with %+v", c)
	}
	if st, _ := s.Status(id); st != "failed" {
		t.Fatalf("unknown outcome served as %q", st)
	}
}

func TestCompletedAtUsesTheClockInUTCSeconds(t *testing.T) {
	clock := newFakeClock()
	clock.Advance(1500 * time.Millisecond)
	s := startSim(t, Options{Now: func() time.Time { return clock.Now().In(time.FixedZone("BRT", -3*3600)) }})
	id, err := s.Submit(SampleCPFs(2, 18))
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, s, id)
	raw, _ := s.Notification(id)
	var n note
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	if n.CompletedAt != "2026-11-22T10:00:01Z" {
		t.Fatalf("completed_at %q", n.CompletedAt)
	}
	if !bytes.HasPrefix(raw, []byte(`{"event":"batch.completed","batch_id":"`+id+`","status":"completed","total_requested":2,"total_found":`)) {
		t.Fatalf("notification member order: %s", raw)
	}
}

func TestMalformedCPFsAreAcceptedButNeverFound(t *testing.T) {
	s := startSim(t, Options{})
	var bad []string
	for _, c := range SampleCPFs(40, 29) {
		last := (c[10]-'0'+1)%10 + '0'
		bad = append(bad, c[:10]+string(rune(last)))
	}
	bad = append(bad, "11111111111", "00000000000")
	id := submitHTTP(t, s, bad)
	waitFinal(t, s, id)
	items, _ := s.Results(id)
	for _, raw := range items {
		var it decodedItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		if it.Result != "not_found" {
			t.Fatalf("malformed CPF answered %s", raw)
		}
	}
	if len(items) != len(bad) {
		t.Fatalf("%d items for %d CPFs", len(items), len(bad))
	}
}
