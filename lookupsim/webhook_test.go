package lookupsim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

const testSecret = "whsec test sécret " // trailing space and non-ASCII: used as is

// independentSignature follows the steps of docs/provider-api.md §5.2 without the
// signature package: HMAC-SHA256, lowercase hex, Base64 of the hex text.
func independentSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(mac.Sum(nil))))
}

type delivery struct {
	method, path string
	header       http.Header
	body         []byte
	at           time.Time
}

// newReceiver starts a webhook receiver; respond decides each reply from
// the order in which requests arrived (1-based). It returns the URL and a
// channel of every request received.
func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) (string, <-chan delivery) {
	t.Helper()
	ch := make(chan delivery, 64)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- delivery{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body, at: time.Now()}
		respond(int(n.Add(1)), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", ch
}

func ok(int, http.ResponseWriter, *http.Request) {}

func next(t *testing.T, ch <-chan delivery) delivery {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery within 5s")
		return delivery{}
	}
}

func none(t *testing.T, ch <-chan delivery, wait time.Duration) {
	t.Helper()
	select {
	case d := <-ch:
		t.Fatalf("unexpected delivery, attempt %s", d.header.Get("X-Service-Attempt"))
	case <-time.After(wait):
	}
}

func webhookSim(t *testing.T, url string, opts Options) *Server {
	opts.WebhookURL, opts.SigningSecret = url, []byte(testSecret)
	return startSim(t, opts)
}

func TestWebhookDelivery(t *testing.T) {
	url, ch := newReceiver(t, ok)
	s := webhookSim(t, url, Options{Outcome: Cycle("partial")})
	id, err := s.Submit(SampleCPFs(50, 19))
	if err != nil {
		t.Fatal(err)
	}
	d := next(t, ch)
	want, _ := s.Notification(id)
	if d.method != http.MethodPost || d.path != "/hook" || string(d.body) != string(want) {
		t.Fatalf("%s %s %s, want the notification %s", d.method, d.path, d.body, want)
	}
	sig := d.header.Get("x-service-webhook-signature")
	if sig != independentSignature(testSecret, d.body) || len(sig) != 88 {
		t.Fatalf("signature %q does not verify", sig)
	}
	for h, v := range map[string]string{
		"Content-Type":      "application/json",
		"Content-Length":    strconv.Itoa(len(d.body)),
		"X-Service-Event":   "batch.completed",
		"X-Service-Attempt": "1",
	} {
		if got := d.header.Get(h); got != v {
			t.Errorf("%s: %q, want %q", h, got, v)
		}
	}
	none(t, ch, 150*time.Millisecond)
	if st := s.Stats(); st.Deliveries != 1 || st.DeliveriesAcked != 1 || st.DeliveryFailures != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWebhookRetriesWithRisingAttempts(t *testing.T) {
	url, ch := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound) // a redirect is not a 2xx
		case 3:
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	s := webhookSim(t, url, Options{RetryBackoff: 30 * time.Millisecond})
	if _, err := s.Submit(SampleCPFs(5, 20)); err != nil {
		t.Fatal(err)
	}
	var got []delivery
	for i := range 4 {
		d := next(t, ch)
		if a := d.header.Get("X-Service-Attempt"); a != strconv.Itoa(i+1) {
			t.Fatalf("delivery %d has attempt %q", i+1, a)
		}
		got = append(got, d)
	}
	none(t, ch, 150*time.Millisecond)
	for i, d := range got[1:] {
		if string(d.body) != string(got[0].body) || d.header.Get("x-service-webhook-signature") != got[0].header.Get("x-service-webhook-signature") {
			t.Fatal("retries do not carry the same body and signature")
		}
		// 30 ms, then 60, then 120: doubling.
		if gap, min := d.at.Sub(got[i].at), 30*time.Millisecond<<i; gap < min {
			t.Fatalf("attempt %d came %s after the previous one, want ≥ %s", i+2, gap, min)
		}
	}
	if st := s.Stats(); st.Deliveries != 4 || st.DeliveriesAcked != 1 || st.DeliveryFailures != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWebhookTimeoutAndDroppedConnectionAreRetried(t *testing.T) {
	url, ch := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1: // slower than DeliveryTimeout
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		case 2: // connection dropped without a reply
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	})
	s := webhookSim(t, url, Options{DeliveryTimeout: 100 * time.Millisecond})
	if _, err := s.Submit(SampleCPFs(5, 21)); err != nil {
		t.Fatal(err)
	}
	first := next(t, ch)
	second := next(t, ch)
	if second.at.Sub(first.at) < 100*time.Millisecond {
		t.Fatalf("attempt 2 came %s after attempt 1, before the timeout", second.at.Sub(first.at))
	}
	third := next(t, ch)
	if a := third.header.Get("X-Service-Attempt"); a != "3" {
		t.Fatalf("attempt %q after a timeout and a dropped connection, want 3", a)
	}
	none(t, ch, 100*time.Millisecond)
	if st := s.Stats(); st.DeliveryFailures != 2 || st.DeliveriesAcked != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWebhookGivesUpAfterMaxAttempts(t *testing.T) {
	url, ch := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	s := webhookSim(t, url, Options{MaxAttempts: 3, RetryBackoff: 10 * time.Millisecond})
	if _, err := s.Submit(SampleCPFs(5, 22)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		next(t, ch)
	}
	none(t, ch, 200*time.Millisecond)
	if st := s.Stats(); st.Deliveries != 3 || st.DeliveriesGivenUp != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDuplicateDeliveries(t *testing.T) {
	url, ch := newReceiver(t, ok)
	s := webhookSim(t, url, Options{Faults: Faults{DuplicateDeliveries: 2}})
	if _, err := s.Submit(SampleCPFs(5, 23)); err != nil {
		t.Fatal(err)
	}
	first := next(t, ch)
	for i := 2; i <= 3; i++ {
		d := next(t, ch)
		if d.header.Get("X-Service-Attempt") != strconv.Itoa(i) || string(d.body) != string(first.body) ||
			d.header.Get("x-service-webhook-signature") != independentSignature(testSecret, first.body) {
			t.Fatalf("duplicate %d: attempt %s, body %s", i, d.header.Get("X-Service-Attempt"), d.body)
		}
	}
	none(t, ch, 150*time.Millisecond)
	if st := s.Stats(); st.Deliveries != 3 || st.DeliveriesAcked != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDropNotificationsAndSetFaults(t *testing.T) {
	url, ch := newReceiver(t, ok)
	s := webhookSim(t, url, Options{Faults: Faults{DropNotifications: true}})
	id, err := s.Submit(SampleCPFs(5, 24))
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, s, id)
	none(t, ch, 150*time.Millisecond)
	if _, ok := s.Notification(id); !ok {
		t.Fatal("a dropped notification should still be readable")
	}
	getPage(t, s, id, "") // still processed and readable
	if err := s.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	id2, err := s.Submit(SampleCPFs(5, 25))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := func() ([]byte, bool) { waitFinal(t, s, id2); return s.Notification(id2) }()
	if d := next(t, ch); string(d.body) != string(want) {
		t.Fatalf("after SetFaults got %s, want %s", d.body, want)
	}
	waitStats(t, s, func(st Stats) bool { return st.Deliveries == 1 && st.DeliveriesAcked == 1 })
}

func TestNoWebhookURLStillProcesses(t *testing.T) {
	s := startSim(t, Options{})
	id, err := s.Submit(SampleCPFs(5, 26))
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, s, id)
	if _, ok := s.Notification(id); !ok {
		t.Fatal("no notification body")
	}
	if st := s.Stats(); st.Deliveries != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCloseStopsDeliveries(t *testing.T) {
	url, ch := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	s, err := New(Options{APIKey: testKey, WebhookURL: url, SigningSecret: []byte(testSecret),
		ProcessingDelay: 10 * time.Millisecond, RetryBackoff: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(SampleCPFs(5, 27)); err != nil {
		t.Fatal(err)
	}
	next(t, ch)
	start := time.Now()
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close waited %s for a delivery backoff", took)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Submit(SampleCPFs(5, 27)); err == nil {
		t.Fatal("Submit after Close succeeded")
	}
	none(t, ch, 50*time.Millisecond)
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		base    time.Duration
		attempt int
		want    time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 2, 2 * time.Second},
		{time.Second, 4, 8 * time.Second},
		{time.Second, 7, time.Minute},
		{time.Second, 100, time.Minute},
		{90 * time.Second, 1, time.Minute},
	}
	for _, c := range cases {
		if got := Backoff(c.base, c.attempt); got != c.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", c.base, c.attempt, got, c.want)
		}
	}
}
