package httpsink_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/httpsink"
)

func TestNewValidates(t *testing.T) {
	key := func() []byte { return []byte("k") }
	for _, tt := range []struct {
		name string
		o    httpsink.Options
		ok   bool
	}{
		{"http", httpsink.Options{URL: "http://127.0.0.1:9/in?x=1", Key: key}, true},
		{"https at the limits", httpsink.Options{URL: "https://example.test/", Key: key, MaxItems: 10000, Timeout: time.Second}, true},
		{"one item a part", httpsink.Options{URL: "https://example.test/", Key: key, MaxItems: 1}, true},
		{"relative", httpsink.Options{URL: "/in", Key: key}, false},
		{"no host", httpsink.Options{URL: "http:///in", Key: key}, false},
		{"ftp", httpsink.Options{URL: "ftp://example.test/", Key: key}, false},
		{"userinfo", httpsink.Options{URL: "https://u:p@example.test/", Key: key}, false},
		{"bad escape", httpsink.Options{URL: "https://example.test/%zz", Key: key}, false},
		{"no key func", httpsink.Options{URL: "https://example.test/"}, false},
		{"empty key", httpsink.Options{URL: "https://example.test/", Key: func() []byte { return nil }}, false},
		{"too many items", httpsink.Options{URL: "https://example.test/", Key: key, MaxItems: 10001}, false},
		{"negative items", httpsink.Options{URL: "https://example.test/", Key: key, MaxItems: -1}, false},
		{"negative timeout", httpsink.Options{URL: "https://example.test/", Key: key, Timeout: -time.Second}, false},
	} {
		s, err := httpsink.New(tt.o)
		if tt.ok && (err != nil || s.Name() != "http") {
			t.Errorf("%s: New = %v, %v", tt.name, s, err)
		}
		if !tt.ok && !errors.Is(err, httpsink.ErrOptions) {
			t.Errorf("%s: New error %v, want ErrOptions", tt.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "u:p") {
			t.Errorf("%s: the error repeats the userinfo: %v", tt.name, err)
		}
	}
}

// TestKeyReadPerAttempt: a new secret (a SIGHUP reload) signs the very
// next attempt.
func TestKeyReadPerAttempt(t *testing.T) {
	const other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	oldKey, err := httpsink.DecodeSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	newKey, err := httpsink.DecodeSecret(other)
	if err != nil {
		t.Fatal(err)
	}
	var current atomic.Pointer[[]byte]
	current.Store(&oldKey)
	before := newReceiver(t, nil)
	after := startReceiver(t, other, httptest.NewServer, nil)
	for i, rc := range []*receiver{before, after} {
		s, err := httpsink.New(httpsink.Options{URL: rc.srv.URL, Key: func() []byte { return *current.Load() }})
		if err != nil {
			t.Fatal(err)
		}
		if res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(2), 0), &progress{}); res.Outcome != sink.Delivered {
			t.Fatalf("attempt %d: Deliver = %+v", i+1, res)
		}
		current.Store(&newKey)
	}
	// Each receiver verified with its own secret (a mismatch fails the test
	// in its cleanup).
}

// TestTLSVerified: an https receiver whose certificate the sink does not
// trust is a connection retry; trusted, it is delivered.
func TestTLSVerified(t *testing.T) {
	rc := startReceiver(t, testSecret, httptest.NewTLSServer, nil)
	s, _ := newSink(t, rc.srv.URL, 10, 5*time.Second)
	e := writeExport(t, "b", cpfItems(2), 0)
	res := s.Deliver(context.Background(), e, &progress{})
	if res.Outcome != sink.Retry || res.Kind != "connection" || !strings.Contains(res.Reason, "certificate") {
		t.Fatalf("untrusted: Deliver = %+v, want retry/connection about the certificate", res)
	}
	key, err := httpsink.DecodeSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := httpsink.New(httpsink.Options{URL: rc.srv.URL, Key: func() []byte { return key }, Client: rc.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if res := trusted.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Delivered {
		t.Fatalf("trusted: Deliver = %+v", res)
	}
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests reached the receiver, want 1", n)
	}
}

// TestEndlessAnswerIsCutOff: a 2xx whose body never ends does not hold
// the delivery: the sink reads a few KiB and hangs up.
func TestEndlessAnswerIsCutOff(t *testing.T) {
	var written atomic.Int64
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for r.Context().Err() == nil { // until the sink hangs up
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
	})
	s, _ := newSink(t, rc.srv.URL, 1, 10*time.Second)
	start := time.Now()
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(2), 0), &progress{})
	if res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Deliver took %s", took)
	}
	if len(rc.requests()) != 2 {
		t.Fatalf("webhook-ids %v, want 2 parts", rc.ids())
	}
	t.Logf("the receiver wrote %d bytes before the sink hung up", written.Load())
}
