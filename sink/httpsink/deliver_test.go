package httpsink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// TestPartsInOrder: 2,500 items at 1,000 a part are three signed POSTs,
// in order, whose items together are the file's lines byte for byte and
// whose manifest is manifest.json.
func TestPartsInOrder(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL+"/hooks", 1000, 5*time.Second)
	items := cpfItems(2500)
	e := writeExport(t, "b", items, 0)
	p := &progress{}
	res := s.Deliver(context.Background(), e, p)
	if res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v, want delivered", res)
	}
	if got, want := rc.ids(), []string{"b:1", "b:2", "b:3"}; !slices.Equal(got, want) {
		t.Fatalf("webhook-ids %v, want %v", got, want)
	}
	if got := p.recorded(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("marks %v, want [1 2 3]", got)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, e.Manifest); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for k, q := range rc.requests() {
		if q.contentType != "application/json" || q.userAgent != "batchhook" {
			t.Errorf("part %d: Content-Type %q, User-Agent %q", k+1, q.contentType, q.userAgent)
		}
		b := decode(t, q.body)
		if b.Type != "batch.exported" || b.Timestamp != exportedAt.Format(time.RFC3339Nano) {
			t.Errorf("part %d: type %q timestamp %q", k+1, b.Type, b.Timestamp)
		}
		if b.Data.BatchID != "b" || b.Data.Part != k+1 || b.Data.Parts != 3 {
			t.Errorf("part %d: batch_id %q part %d parts %d", k+1, b.Data.BatchID, b.Data.Part, b.Data.Parts)
		}
		if !bytes.Equal(b.Data.Manifest, compact.Bytes()) {
			t.Errorf("part %d: manifest %s, want %s", k+1, b.Data.Manifest, compact.Bytes())
		}
		if want := []int{1000, 1000, 500}[k]; len(b.Data.Items) != want {
			t.Errorf("part %d: %d items, want %d", k+1, len(b.Data.Items), want)
		}
		for _, it := range b.Data.Items {
			sent = append(sent, string(it))
		}
	}
	if !slices.Equal(sent, items) {
		t.Fatal("the items sent are not the file's lines in order")
	}
}

// TestRefetchedVersionIDs: the Nth refetch's parts are <batch_id>:r<N>:<part>.
func TestRefetchedVersionIDs(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL, 2, 5*time.Second)
	if res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(5), 2), &progress{}); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	if got, want := rc.ids(), []string{"b:r2:1", "b:r2:2", "b:r2:3"}; !slices.Equal(got, want) {
		t.Fatalf("webhook-ids %v, want %v", got, want)
	}
}

// TestEmptyBatchSendsOnePart: a batch without items is still announced.
func TestEmptyBatchSendsOnePart(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL, 1000, 5*time.Second)
	p := &progress{}
	if res := s.Deliver(context.Background(), writeExport(t, "b_empty", nil, 0), p); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	reqs := rc.requests()
	if len(reqs) != 1 || reqs[0].id != "b_empty:1" {
		t.Fatalf("requests %v, want one b_empty:1", rc.ids())
	}
	if !bytes.Contains(reqs[0].body, []byte(`"part":1,"parts":1,`)) || !bytes.HasSuffix(reqs[0].body, []byte(`"items":[]}}`)) {
		t.Fatalf("body %s: want part 1 of 1 with an empty items array", reqs[0].body)
	}
	if got := p.recorded(); !slices.Equal(got, []int{1}) {
		t.Fatalf("marks %v, want [1]", got)
	}
}

// TestRetriesResendOnlyWhatIsMissing: 500, then 429 with Retry-After, then
// 2xx on part 2. Part 1 goes once; part 2's body is the same bytes on
// every attempt while its timestamp moves on.
func TestRetriesResendOnlyWhatIsMissing(t *testing.T) {
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	s, _ := newSink(t, rc.srv.URL, 3, 5*time.Second)
	e := writeExport(t, "b", cpfItems(7), 0)
	p := &progress{}

	res := s.Deliver(context.Background(), e, p)
	if res.Outcome != sink.Retry || res.Kind != "status" || res.RetryAfter != 0 || !strings.Contains(res.Reason, "500") {
		t.Fatalf("attempt 1 = %+v, want retry/status naming 500", res)
	}
	res = s.Deliver(context.Background(), e, p)
	if res.Outcome != sink.Retry || res.Kind != "status" || res.RetryAfter != 7*time.Second || !strings.Contains(res.Reason, "429") {
		t.Fatalf("attempt 2 = %+v, want retry/status after 7s naming 429", res)
	}
	if res = s.Deliver(context.Background(), e, p); res.Outcome != sink.Delivered {
		t.Fatalf("attempt 3 = %+v, want delivered", res)
	}
	reqs := rc.requests()
	if got, want := rc.ids(), []string{"b:1", "b:2", "b:2", "b:2", "b:3"}; !slices.Equal(got, want) {
		t.Fatalf("webhook-ids %v, want %v", got, want)
	}
	if got := p.recorded(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("marks %v, want [1 2 3]", got)
	}
	for i := 2; i <= 3; i++ {
		if !bytes.Equal(reqs[i].body, reqs[1].body) {
			t.Fatalf("attempt %d of part 2 sent another body", i)
		}
		if reqs[i].ts == reqs[1].ts {
			t.Fatalf("attempt %d of part 2 reused timestamp %s", i, reqs[i].ts)
		}
	}
	if ts, err := strconv.ParseInt(reqs[1].ts, 10, 64); err != nil || ts <= 0 {
		t.Fatalf("webhook-timestamp %q is not unix seconds", reqs[1].ts)
	}
}

// TestRetryAfterDate: Retry-After as an HTTP date counts from the sink's
// clock.
func TestRetryAfterDate(t *testing.T) {
	var at time.Time
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", at.Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	s, c := newSink(t, rc.srv.URL, 10, 5*time.Second)
	// The sink reads the clock twice per attempt (timestamp, then
	// Retry-After); each reading advances it a minute.
	at = c.t.Add(2*time.Minute + 90*time.Second)
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(1), 0), &progress{})
	if res.Outcome != sink.Retry || res.RetryAfter != 90*time.Second {
		t.Fatalf("Deliver = %+v, want retry after 90s", res)
	}
}

// TestTimeoutRetries: a receiver that does not answer within Timeout is a
// retry of kind timeout, and the next attempt sends the same body.
func TestTimeoutRetries(t *testing.T) {
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	s, _ := newSink(t, rc.srv.URL, 10, 200*time.Millisecond)
	e := writeExport(t, "b", cpfItems(3), 0)
	p := &progress{}
	start := time.Now()
	res := s.Deliver(context.Background(), e, p)
	if res.Outcome != sink.Retry || res.Kind != "timeout" {
		t.Fatalf("Deliver = %+v, want retry/timeout", res)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the timeout took %s", took)
	}
	if len(p.recorded()) != 0 {
		t.Fatalf("marks %v after a timeout", p.recorded())
	}
	if res = s.Deliver(context.Background(), e, p); res.Outcome != sink.Delivered {
		t.Fatalf("second Deliver = %+v", res)
	}
	reqs := rc.requests()
	if len(reqs) != 2 || !bytes.Equal(reqs[0].body, reqs[1].body) {
		t.Fatalf("%d requests; the retried body must equal the first", len(reqs))
	}
}

// TestShutdownRetries: a cancelled context ends a hanging request at once
// as a retry.
func TestShutdownRetries(t *testing.T) {
	started := make(chan struct{})
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	s, _ := newSink(t, rc.srv.URL, 10, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
		}
		cancel()
	}()
	res := s.Deliver(ctx, writeExport(t, "b", cpfItems(3), 0), &progress{})
	if res.Outcome != sink.Retry || res.Kind != "cancelled" {
		t.Fatalf("Deliver = %+v, want retry/cancelled", res)
	}
}

// TestConnectionRefusedRetries: nobody listening is a retry of kind
// connection.
func TestConnectionRefusedRetries(t *testing.T) {
	rc := newReceiver(t, nil)
	url := rc.srv.URL
	rc.srv.Close()
	s, _ := newSink(t, url, 10, 5*time.Second)
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(3), 0), &progress{})
	if res.Outcome != sink.Retry || res.Kind != "connection" || !strings.Contains(res.Reason, url) {
		t.Fatalf("Deliver = %+v, want retry/connection naming %s", res, url)
	}
}

// TestGoneFails: 410 on part 2 fails the delivery for good, names the
// status and the URL without its query, and sends nothing after it.
func TestGoneFails(t *testing.T) {
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		if id == "b:2" {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s, _ := newSink(t, rc.srv.URL+"/in/T0KEN-in-path?token=s3cr3t-token", 2, 5*time.Second)
	p := &progress{}
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(5), 0), p)
	if res.Outcome != sink.Failed || res.Kind != "status" {
		t.Fatalf("Deliver = %+v, want failed/status", res)
	}
	if !strings.Contains(res.Reason, "410") || !strings.Contains(res.Reason, rc.srv.URL+"/…") ||
		strings.Contains(res.Reason, "s3cr3t") || strings.Contains(res.Reason, "T0KEN") {
		t.Fatalf("Reason %q: want 410 and the URL's scheme and host only (a path or query may hold a secret)", res.Reason)
	}
	if got, want := rc.ids(), []string{"b:1", "b:2"}; !slices.Equal(got, want) {
		t.Fatalf("webhook-ids %v, want %v", got, want)
	}
	if got := p.recorded(); !slices.Equal(got, []int{1}) {
		t.Fatalf("marks %v, want [1]", got)
	}
}

// TestRedirectNotFollowed: a 302 is a permanent failure and its target
// never hears of the export.
func TestRedirectNotFollowed(t *testing.T) {
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusFound)
	})
	s, _ := newSink(t, rc.srv.URL, 10, 5*time.Second)
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(3), 0), &progress{})
	if res.Outcome != sink.Failed || !strings.Contains(res.Reason, "302") {
		t.Fatalf("Deliver = %+v, want failed naming 302", res)
	}
	if n := len(target.requests()); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("the receiver got %d requests, want 1", n)
	}
}

// TestMarkFailureRetries: a part whose progress cannot be recorded is a
// local retry, and it is sent again on the next attempt.
func TestMarkFailureRetries(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL, 2, 5*time.Second)
	e := writeExport(t, "b", cpfItems(4), 0)
	p := &progress{failMark: true}
	res := s.Deliver(context.Background(), e, p)
	if res.Outcome != sink.Retry || res.Kind != "local" || !strings.Contains(res.Reason, "disk full") {
		t.Fatalf("Deliver = %+v, want retry/local", res)
	}
	p.failMark = false
	if res = s.Deliver(context.Background(), e, p); res.Outcome != sink.Delivered {
		t.Fatalf("second Deliver = %+v", res)
	}
	if got, want := rc.ids(), []string{"b:1", "b:1", "b:2"}; !slices.Equal(got, want) {
		t.Fatalf("webhook-ids %v, want %v", got, want)
	}
}

// TestDoneSkipsParts: parts already recorded are not sent; the items of a
// later part are still the right lines.
func TestDoneSkipsParts(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL, 2, 5*time.Second)
	items := cpfItems(5)
	e := writeExport(t, "b", items, 0)
	if res := s.Deliver(context.Background(), e, &progress{done: 2}); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	reqs := rc.requests()
	if len(reqs) != 1 || reqs[0].id != "b:3" {
		t.Fatalf("webhook-ids %v, want [b:3]", rc.ids())
	}
	if got := decode(t, reqs[0].body).Data.Items; len(got) != 1 || string(got[0]) != items[4] {
		t.Fatalf("part 3 items %s, want [%s]", got, items[4])
	}
	if res := s.Deliver(context.Background(), e, &progress{done: 3}); res.Outcome != sink.Delivered || len(rc.requests()) != 1 {
		t.Fatalf("a fully recorded delivery = %+v and sent again", res)
	}
}

// TestReasonsHoldNoItemNorSignature: whatever goes wrong, a Reason never
// carries an item's text, a signature or the key.
func TestReasonsHoldNoItemNorSignature(t *testing.T) {
	statuses := []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusGone, http.StatusBadRequest, http.StatusMovedPermanently}
	for _, code := range statuses {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
				// A receiver that echoes the request back must not get
				// it into the Reason either.
				w.Header().Set("Location", "/x")
				w.WriteHeader(code)
				fmt.Fprintf(w, "%s %s", r.Header.Get("webhook-signature"), cpfItem(0))
			})
			s, _ := newSink(t, rc.srv.URL, 10, 5*time.Second)
			res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(3), 0), &progress{})
			if res.Outcome == sink.Delivered {
				t.Fatalf("Deliver = %+v", res)
			}
			sig := rc.requests()[0].sig
			for _, secret := range []string{"529.982", "Pessoa", sig, strings.TrimPrefix(sig, "v1,"), strings.TrimPrefix(testSecret, "whsec_")} {
				if strings.Contains(res.Reason, secret) {
					t.Fatalf("Reason %q holds %q", res.Reason, secret)
				}
			}
		})
	}
}

// TestMalformedExportFails: a malformed item fails locally before anything
// wrong is sent; an export that does not match its count is retried (only
// a change of the file since the dispatcher checked it can cause that, and
// the next attempt reads the newest version), never failed for good.
func TestMalformedExportFails(t *testing.T) {
	rc := newReceiver(t, nil)
	s, _ := newSink(t, rc.srv.URL, 2, 5*time.Second)
	short := writeExport(t, "b", cpfItems(3), 0)
	short.Items = 4
	long := writeExport(t, "b", cpfItems(3), 0)
	long.Items = 2
	blank := writeExport(t, "b", []string{cpfItem(0), ""}, 0)
	// short skips part 1 so that its part 2 is the one that comes up short.
	cases := []struct {
		name string
		e    sink.Export
		done int
		want sink.Outcome
	}{{"short", short, 1, sink.Retry}, {"long", long, 0, sink.Retry}, {"blank line", blank, 0, sink.Failed}}
	for _, c := range cases {
		name, e := c.name, c.e
		res := s.Deliver(context.Background(), e, &progress{done: c.done})
		if res.Outcome != c.want || res.Kind != "local" {
			t.Errorf("%s: Deliver = %+v, want %s/local", name, res, c.want)
		}
		if strings.Contains(res.Reason, "529.982") {
			t.Errorf("%s: Reason %q holds an item", name, res.Reason)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d requests for malformed exports", n)
	}
	missing := writeExport(t, "b", cpfItems(3), 0)
	if err := os.Remove(filepath.Join(missing.Dir, "results.ndjson")); err != nil {
		t.Fatal(err)
	}
	if res := s.Deliver(context.Background(), missing, &progress{}); res.Outcome != sink.Retry || res.Kind != "local" {
		t.Fatalf("missing results.ndjson: Deliver = %+v, want retry/local", res)
	}
}

// TestItemLimit: an item over MaxItemBytes fails locally; one of exactly
// the limit goes through.
func TestItemLimit(t *testing.T) {
	rc := newReceiver(t, nil)
	key, err := httpsink.DecodeSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	item := cpfItem(7)
	for _, tt := range []struct {
		limit int
		want  sink.Outcome
	}{{len(item), sink.Delivered}, {len(item) - 1, sink.Failed}} {
		s, err := httpsink.New(httpsink.Options{URL: rc.srv.URL, Key: func() []byte { return key }, MaxItemBytes: tt.limit})
		if err != nil {
			t.Fatal(err)
		}
		res := s.Deliver(context.Background(), writeExport(t, "b", []string{item}, 0), &progress{})
		if res.Outcome != tt.want || (tt.want == sink.Failed && res.Kind != "local") {
			t.Errorf("limit %d for an item of %d bytes: Deliver = %+v, want %v", tt.limit, len(item), res, tt.want)
		}
	}
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}
