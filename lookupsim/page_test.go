package lookupsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"
)

func TestProcessingBeforeFinal(t *testing.T) {
	s := startSim(t, Options{ProcessingDelay: 200 * time.Millisecond})
	id := submitHTTP(t, s, SampleCPFs(10, 1))
	p := getPage(t, s, id, "")
	want := `{"batch_id":"` + id + `","status":"processing","results":[],"next_cursor":null}`
	if string(p.raw) != want {
		t.Fatalf("in-flight page %s, want %s", p.raw, want)
	}
	if _, ok := s.Results(id); ok {
		t.Fatal("Results of an unfinished batch")
	}
	if _, ok := s.Notification(id); ok {
		t.Fatal("Notification of an unfinished batch")
	}
	waitFinal(t, s, id)
	if p := getPage(t, s, id, ""); p.Status != "completed" || len(p.Results) != 10 {
		t.Fatalf("final page %s", p.raw)
	}
	if st := s.Stats(); st.Polls != 1 || st.PagesServed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPagingConcatenatesToResults(t *testing.T) {
	s := startSim(t, Options{})
	id := submitHTTP(t, s, SampleCPFs(1000, 9))
	waitFinal(t, s, id)
	want, ok := s.Results(id)
	if !ok || len(want) != 1000 {
		t.Fatalf("Results: %d items, %v", len(want), ok)
	}
	memberOrder := regexp.MustCompile(`^\{"batch_id":"[^"]+","status":"completed","results":\[.*\],"next_cursor":(null|"[^"]+")\}$`)
	for _, limit := range []int{1, 7, 100, 333, 999, 1000} {
		items, pages := fetchAll(t, s, id, limit)
		if wantPages := (1000 + limit - 1) / limit; len(pages) != wantPages {
			t.Fatalf("limit %d: %d pages, want %d", limit, len(pages), wantPages)
		}
		if len(items) != len(want) {
			t.Fatalf("limit %d: %d items", limit, len(items))
		}
		for i := range items {
			if !bytes.Equal(items[i], want[i]) {
				t.Fatalf("limit %d item %d: %s, Results has %s", limit, i, items[i], want[i])
			}
		}
		for _, p := range pages {
			if !memberOrder.Match(p) {
				t.Fatalf("limit %d: page members not in the contract's order: %.200s", limit, p)
			}
			var c bytes.Buffer
			if err := json.Compact(&c, p); err != nil || !bytes.Equal(c.Bytes(), p) {
				t.Fatalf("page is not compact JSON (%v)", err)
			}
		}
	}
}

func TestPagesAreByteStable(t *testing.T) {
	s := startSim(t, Options{})
	id := submitHTTP(t, s, SampleCPFs(250, 10))
	waitFinal(t, s, id)
	first := getPage(t, s, id, "?limit=100")
	second := getPage(t, s, id, "?limit=100")
	if !bytes.Equal(first.raw, second.raw) || first.NextCursor == nil {
		t.Fatal("first page differs between requests or has no cursor")
	}
	a := getPage(t, s, id, "?limit=100&cursor="+*first.NextCursor)
	b := getPage(t, s, id, "?limit=100&cursor="+*second.NextCursor)
	if !bytes.Equal(a.raw, b.raw) {
		t.Fatal("second page differs between requests")
	}
	// The last page ends with null.
	last := getPage(t, s, id, "?limit=100&cursor="+*a.NextCursor)
	if last.NextCursor != nil || len(last.Results) != 50 || !bytes.HasSuffix(last.raw, []byte(`,"next_cursor":null}`)) {
		t.Fatalf("last page: %d items, cursor %v", len(last.Results), last.NextCursor)
	}
	// Limits: default 100, clamp at 1000.
	if p := getPage(t, s, id, ""); len(p.Results) != 100 {
		t.Fatalf("default limit gave %d items", len(p.Results))
	}
	if p := getPage(t, s, id, "?limit=5000"); len(p.Results) != 250 || p.NextCursor != nil {
		t.Fatalf("limit 5000 gave %d items", len(p.Results))
	}
	big := submitHTTP(t, s, SampleCPFs(1000, 11))
	waitFinal(t, s, big)
	for _, q := range []string{"?limit=1001", "?limit=99999999999999999999"} {
		if p := getPage(t, s, big, q); len(p.Results) != 1000 || p.NextCursor != nil {
			t.Fatalf("%s gave %d items", q, len(p.Results))
		}
	}
	// Items carry non-ASCII names, served as UTF-8, not escaped.
	all, _ := s.Results(big)
	var joined []byte
	for _, it := range all {
		joined = append(joined, it...)
	}
	if !bytes.Contains(joined, []byte("ã")) || !bytes.Contains(joined, []byte("ç")) || bytes.Contains(joined, []byte(`\u`)) {
		t.Fatal("names should include non-ASCII letters, unescaped")
	}
}

func TestPageErrors(t *testing.T) {
	s := startSim(t, Options{Outcome: Cycle("completed", "failed")})
	id := submitHTTP(t, s, SampleCPFs(20, 12))
	other := submitHTTP(t, s, SampleCPFs(20, 13))
	waitFinal(t, s, id)
	waitFinal(t, s, other)
	p := getPage(t, s, id, "?limit=5")
	cursor := *p.NextCursor
	base := s.URL() + "/api/v1/batches/"
	cases := []struct {
		name, url, key string
		status         int
		error          string
	}{
		{"no key", base + id, "", 401, "unauthorized"},
		{"wrong key", base + id, "nope", 401, "unauthorized"},
		{"unknown id", base + "b_00000000000000000000", testKey, 404, "not_found"},
		{"limit 0", base + id + "?limit=0", testKey, 400, ""},
		{"limit -3", base + id + "?limit=-3", testKey, 400, ""},
		{"limit abc", base + id + "?limit=abc", testKey, 400, ""},
		{"limit empty", base + id + "?limit=", testKey, 400, ""},
		{"limit 1.5", base + id + "?limit=1.5", testKey, 400, ""},
		{"garbage cursor", base + id + "?cursor=xyz", testKey, 400, "bad_cursor"},
		{"truncated cursor", base + id + "?cursor=" + cursor[:len(cursor)-1], testKey, 400, "bad_cursor"},
		{"cursor of another batch", base + other + "?cursor=" + cursor, testKey, 400, "bad_cursor"},
		{"cursor past the end", base + id + "?cursor=" + encodeCursor(id, 20), testKey, 400, "bad_cursor"},
	}
	for _, c := range cases {
		r := call(t, http.MethodGet, c.url, c.key, nil)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
			continue
		}
		if e := errorOf(t, r); c.error != "" && e != c.error {
			t.Errorf("%s: error %q, want %q", c.name, e, c.error)
		}
	}
	if r := call(t, http.MethodDelete, base+id, testKey, nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", r.status)
	}
}

func TestRetention(t *testing.T) {
	clock := newFakeClock()
	s := startSim(t, Options{Now: clock.Now, Retention: time.Hour})
	id := submitHTTP(t, s, SampleCPFs(5, 14))
	waitFinal(t, s, id)
	clock.Advance(time.Hour) // exactly at retention: still served
	getPage(t, s, id, "")
	clock.Advance(time.Second)
	r := call(t, http.MethodGet, s.URL()+"/api/v1/batches/"+id, testKey, nil)
	if r.status != http.StatusNotFound || errorOf(t, r) != "not_found" {
		t.Fatalf("after retention: %d %s", r.status, r.body)
	}
}

func TestDefaultRetentionIsSevenDays(t *testing.T) {
	clock := newFakeClock()
	s := startSim(t, Options{Now: clock.Now})
	id := submitHTTP(t, s, SampleCPFs(5, 15))
	waitFinal(t, s, id)
	clock.Advance(7*24*time.Hour - time.Minute)
	getPage(t, s, id, "")
	clock.Advance(2 * time.Minute)
	if r := call(t, http.MethodGet, s.URL()+"/api/v1/batches/"+id, testKey, nil); r.status != http.StatusNotFound {
		t.Fatalf("after 7 days: %d", r.status)
	}
}
