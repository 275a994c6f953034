package httpsink_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// paymentVector returns the payment message of testdata/signatures.txt
// (made by openssl): its id, timestamp, body and signature.
func paymentVector(t *testing.T) (id, ts, body, sig string) {
	t.Helper()
	f, err := os.Open("testdata/signatures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), "\t"); len(fields) == 5 && strings.HasPrefix(fields[1], "payment:") {
			return fields[1], fields[2], fields[3], fields[4]
		}
	}
	t.Fatal("no payment vector in testdata/signatures.txt")
	return
}

func payment(t *testing.T, seq uint64, raw string) sink.Payment {
	t.Helper()
	at := time.Date(2026, 11, 24, 0, 30, 0, 123000000, time.UTC)
	line, err := sink.PaymentLine(seq, at, "transaction.paid", 2, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sink.Payment{Seq: seq, ReceivedAt: at, Event: "transaction.paid", Attempt: 2, Line: line}
}

func paymentSink(t *testing.T, url string, now time.Time) *httpsink.Sink {
	t.Helper()
	key, err := httpsink.DecodeSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpsink.New(httpsink.Options{URL: url, Key: func() []byte { return key }, Timeout: 5 * time.Second,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPaymentMessageMatchesOpenSSLVector: the message of an event is
// byte for byte the vector's body, with its id, timestamp and the
// signature openssl computed.
func TestPaymentMessageMatchesOpenSSLVector(t *testing.T) {
	id, ts, body, sig := paymentVector(t)
	rc := newReceiver(t, nil)
	s := paymentSink(t, rc.srv.URL, time.Unix(1700000200, 0))
	done, res := s.DeliverPayments(context.Background(), []sink.Payment{payment(t, 7, `{"transaction": {"id": "tx-7", "status": "paid"}}`)})
	if done != 1 || res.Outcome != sink.Delivered {
		t.Fatalf("done %d %+v", done, res)
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	q := reqs[0]
	if q.id != id || q.ts != ts || string(q.body) != body || q.sig != sig || q.contentType != "application/json" {
		t.Fatalf("request id %q ts %q sig %q body\n%s\nwant id %q ts %q sig %q body\n%s", q.id, q.ts, q.sig, q.body, id, ts, sig, body)
	}
}

func TestPaymentRunStopsAtTheFirstRefusal(t *testing.T) {
	rc := newReceiver(t, func(n int, id string, w http.ResponseWriter, r *http.Request) {
		switch id {
		case "payment:2":
			w.Header().Set("Retry-After", "9")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "payment:5":
			w.WriteHeader(http.StatusUnprocessableEntity)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	s := paymentSink(t, rc.srv.URL, time.Now())
	run := []sink.Payment{payment(t, 1, `{}`), payment(t, 2, `{}`), payment(t, 3, `{}`)}
	done, res := s.DeliverPayments(context.Background(), run)
	if done != 1 || res.Outcome != sink.Retry || res.RetryAfter != 9*time.Second || res.Kind != "status" {
		t.Fatalf("done %d %+v", done, res)
	}
	if got := strings.Join(rc.ids(), ","); got != "payment:1,payment:2" {
		t.Fatalf("ids %s: nothing after the refused event may go", got)
	}
	done, res = s.DeliverPayments(context.Background(), []sink.Payment{payment(t, 4, `{}`), payment(t, 5, `{}`)})
	if done != 1 || res.Outcome != sink.Failed || !strings.Contains(res.Reason, "422") {
		t.Fatalf("done %d %+v", done, res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if done, res = s.DeliverPayments(ctx, run); done != 0 || res.Outcome != sink.Retry || res.Kind != "cancelled" {
		t.Fatalf("cancelled: done %d %+v", done, res)
	}
}
