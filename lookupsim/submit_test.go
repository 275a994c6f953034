package lookupsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var batchIDPattern = regexp.MustCompile(`^b_[0-9a-f]{20}$`)

func TestSubmitAuth(t *testing.T) {
	s := startSim(t, Options{})
	body := submitBody(t, SampleCPFs(3, 1))
	for _, key := range []string{"", "wrong", strings.ToUpper(testKey), testKey + "x"} {
		r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", key, body)
		if r.status != http.StatusUnauthorized || errorOf(t, r) != "unauthorized" {
			t.Fatalf("key %q: %d %s", key, r.status, r.body)
		}
	}
	// A different scheme is refused too.
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/batches", bytes.NewReader(body))
	req.Header.Set("Authorization", "Basic "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Basic scheme: %d", resp.StatusCode)
	}
	if st := s.Stats(); st.Submitted != 0 {
		t.Fatalf("refused submissions counted: %+v", st)
	}
}

func TestSubmitAcceptsAndDeduplicates(t *testing.T) {
	s := startSim(t, Options{})
	cpfs := SampleCPFs(5, 2)
	sent := []string{cpfs[0], cpfs[1], cpfs[0], fmt.Sprintf("%s.%s.%s-%s", cpfs[2][:3], cpfs[2][3:6], cpfs[2][6:9], cpfs[2][9:]), cpfs[2], cpfs[3], cpfs[4], cpfs[1]}
	r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", testKey, submitBody(t, sent))
	if r.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var out struct {
		BatchID        string `json:"batch_id"`
		Status         string `json:"status"`
		TotalRequested int    `json:"total_requested"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if !batchIDPattern.MatchString(out.BatchID) || out.Status != "processing" || out.TotalRequested != 5 {
		t.Fatalf("reply %s", r.body)
	}
	waitFinal(t, s, out.BatchID)
	items, _ := s.Results(out.BatchID)
	var got []string
	for _, it := range items {
		var v struct{ CPF string }
		if err := json.Unmarshal(it, &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v.CPF)
	}
	if strings.Join(got, ",") != strings.Join(cpfs, ",") {
		t.Fatalf("items in order %v, want %v (first occurrences, punctuation stripped)", got, cpfs)
	}
	// Ids differ between batches.
	if other := submitHTTP(t, s, cpfs); other == out.BatchID || !batchIDPattern.MatchString(other) {
		t.Fatalf("second id %q", other)
	}
}

func TestSubmitValidation(t *testing.T) {
	s := startSim(t, Options{})
	good := SampleCPFs(2, 3)
	thousand := SampleCPFs(1000, 4)
	cases := []struct {
		name string
		body string
		want int
	}{
		{"not JSON", `cpfs=1`, 400},
		{"array body", `["` + good[0] + `"]`, 400},
		{"null body", `null`, 400},
		{"empty list", `{"cpfs":[]}`, 400},
		{"missing cpfs", `{}`, 400},
		{"number", `{"cpfs":[52998224725]}`, 400},
		{"short", `{"cpfs":["` + good[0] + `","1234567890"]}`, 400},
		{"letters", `{"cpfs":["5299822472X"]}`, 400},
		{"spaces", `{"cpfs":["529 982 247 25"]}`, 400},
		{"unknown member", `{"cpfs":["` + good[0] + `"],"webhook_url":"http://x"}`, 400},
		{"trailing data", `{"cpfs":["` + good[0] + `"]} {}`, 400},
		{"1001 unique", string(submitBody(t, append(append([]string(nil), thousand...), good[0]))), 400},
		{"1000 plus duplicates", string(submitBody(t, append(append([]string(nil), thousand...), thousand[:500]...))), 202},
		{"over 1 MiB", `{"cpfs":["` + good[0] + `"]` + strings.Repeat(" ", 1<<20) + `}`, 413},
	}
	for _, c := range cases {
		r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", testKey, []byte(c.body))
		if r.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.want)
			continue
		}
		if c.want >= 400 {
			msg := errorOf(t, r)
			for _, cpf := range append(good, thousand[0]) {
				if strings.Contains(msg, cpf) {
					t.Errorf("%s: error quotes a CPF: %s", c.name, msg)
				}
			}
		}
	}
	if _, err := s.Submit([]string{"abc"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("in-process Submit of a bad CPF: %v", err)
	}
}

func TestSubmitPerMinuteLimit(t *testing.T) {
	clock := newFakeClock()
	s := startSim(t, Options{SubmitPerMinute: 2, Now: clock.Now, ProcessingDelay: 10 * time.Millisecond})
	cpfs := SampleCPFs(3, 5)
	submitHTTP(t, s, cpfs)
	clock.Advance(20 * time.Second)
	submitHTTP(t, s, cpfs)
	r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", testKey, submitBody(t, cpfs))
	if r.status != http.StatusTooManyRequests || errorOf(t, r) != "rate_limited" {
		t.Fatalf("third submission: %d %s", r.status, r.body)
	}
	// The oldest submission leaves the window 40 s from now.
	if ra := r.header.Get("Retry-After"); ra != "40" {
		t.Fatalf("Retry-After %q, want 40", ra)
	}
	var le *LimitError
	if _, err := s.Submit(cpfs); !errors.As(err, &le) || !errors.Is(err, ErrRateLimited) || le.Limit != "submit_per_minute" {
		t.Fatalf("in-process Submit: %v", err)
	}
	clock.Advance(40 * time.Second) // the first is now exactly 60 s old: out of the window
	submitHTTP(t, s, cpfs)
	if _, err := s.Submit(cpfs); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("window should be full again: %v", err)
	}
	if st := s.Stats(); st.Submitted != 3 || st.RateLimited != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMaxInFlightLimit(t *testing.T) {
	s := startSim(t, Options{MaxInFlight: 2, ProcessingDelay: 300 * time.Millisecond})
	cpfs := SampleCPFs(3, 6)
	a := submitHTTP(t, s, cpfs)
	submitHTTP(t, s, cpfs)
	r := call(t, http.MethodPost, s.URL()+"/api/v1/batches", testKey, submitBody(t, cpfs))
	if r.status != http.StatusTooManyRequests || errorOf(t, r) != "rate_limited" {
		t.Fatalf("third submission: %d %s", r.status, r.body)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	waitFinal(t, s, a)
	submitHTTP(t, s, cpfs) // a slot was freed
}

func TestLimitsCanBeDisabled(t *testing.T) {
	s := startSim(t, Options{SubmitPerMinute: Unlimited, MaxInFlight: Unlimited, ProcessingDelay: time.Hour})
	cpfs := SampleCPFs(1, 7)
	for i := range 60 {
		if _, err := s.Submit(cpfs); err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	s, err := New(Options{APIKey: "k", ProcessingDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	cpfs := SampleCPFs(1, 8)
	for i := range DefaultSubmitPerMinute {
		if _, err := s.Submit(cpfs); err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
	}
	if _, err := s.Submit(cpfs); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("submission 11 within a minute: %v", err)
	}
}
