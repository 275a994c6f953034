package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

func newPaymentsServer(t *testing.T, st *store.Store, enabled bool) string {
	t.Helper()
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, io.EOF }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: st, Token: func() []byte { return nil }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Logger: zerolog.Nop(),
		Payments: st, PaymentsEnabled: enabled})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func logPayment(t *testing.T, st *store.Store, key, body string, at time.Time) uint64 {
	t.Helper()
	seq, created, err := st.RecordPayment(store.PaymentEvent{ReceivedAt: at, Event: "transaction.paid", Attempt: 2,
		DedupKey: key, BodySHA256: "sha-" + key}, []byte(body))
	if err != nil || !created {
		t.Fatalf("record %s: %v %v", key, created, err)
	}
	return seq
}

func TestPaymentEventRoutes(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetPaymentSinks([]string{"file", "http"})
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	const personal = `{"transaction":{"document_number":"52998224725","first_name":"Maria"}}`
	for i := range 5 {
		logPayment(t, st, "k"+string(rune('a'+i)), personal, at.Add(time.Duration(i)*time.Second))
	}
	if err := st.PaymentsDelivered("file", 2, at); err != nil {
		t.Fatal(err)
	}
	base := newPaymentsServer(t, st, true)

	var page PaymentPage
	if code := getJSON(t, "GET", base+"/admin/payments/events?since=1&limit=2", &page); code != 200 ||
		len(page.Items) != 2 || page.Items[0].Seq != 2 || page.Items[1].Seq != 3 || page.NextSince != 3 || !page.Enabled {
		t.Fatalf("page after 1 = %d %+v", code, page)
	}
	page = PaymentPage{}
	if getJSON(t, "GET", base+"/admin/payments/events?since=3", &page); len(page.Items) != 2 || page.Items[0].Seq != 4 || page.NextSince != 0 {
		t.Fatalf("last page = %+v", page)
	}
	page = PaymentPage{}
	if getJSON(t, "GET", base+"/admin/payments/events", &page); len(page.Items) != 5 || page.Items[0].Seq != 1 {
		t.Fatalf("default page = %+v", page)
	}
	e := page.Items[0]
	if e.Event != "transaction.paid" || e.Attempt != 2 || e.DedupKey != "ka" || e.BodySHA256 != "sha-ka" ||
		e.BodyLen != len(personal) || !e.ReceivedAt.Equal(at) || e.BodyDroppedAt != nil {
		t.Fatalf("view = %+v", e)
	}

	var show PaymentEventView
	if code := getJSON(t, "GET", base+"/admin/payments/events/3", &show); code != 200 || show.Seq != 3 || len(show.Deliveries) != 2 {
		t.Fatalf("show 3 = %d %+v", code, show)
	}
	if d := show.Deliveries; d[0].Sink != "file" || d[0].State != store.DeliveryPending || d[1].Sink != "http" {
		t.Fatalf("deliveries of 3 = %+v", d)
	}
	getJSON(t, "GET", base+"/admin/payments/events/2", &show)
	if show.Deliveries[0].State != store.DeliveryDelivered {
		t.Fatalf("deliveries of 2 = %+v", show.Deliveries)
	}

	for url, want := range map[string]struct {
		code int
		word string // the parameter a 400 names
	}{
		"/admin/payments/events?since=-1":     {400, "since"},
		"/admin/payments/events?since=x":      {400, "since"},
		"/admin/payments/events?limit=0":      {400, "limit"},
		"/admin/payments/events?limit=1001":   {400, "limit"},
		"/admin/payments/events?limit=1000":   {200, ""},
		"/admin/payments/events/0":            {400, "seq"},
		"/admin/payments/events/abc":          {400, "seq"},
		"/admin/payments/events/99":           {404, ""},
		"/admin/payments/events?since=999999": {200, ""},
	} {
		code, body := call(t, "GET", base+url)
		if code != want.code {
			t.Errorf("%s = %d %v, want %d", url, code, body, want.code)
		}
		if msg, _ := body["error"].(string); want.word != "" && !strings.HasPrefix(msg, want.word) {
			t.Errorf("%s: error %q does not name %s", url, msg, want.word)
		}
	}
	// No route serves a payment body.
	for _, url := range []string{"/admin/payments/events", "/admin/payments/events/1"} {
		resp, err := http.Get(base + url)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(raw), "52998224725") || strings.Contains(string(raw), "Maria") {
			t.Fatalf("%s serves the body: %s", url, raw)
		}
	}
}

func TestPaymentQuarantineBodyIsWithheld(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	if err := st.Quarantine(store.Quarantined{ID: "p1", Reason: "body is not a JSON object", ReceivedAt: now,
		Raw: []byte(`["52998224725"]`), Product: store.ProductPayments}); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(store.Quarantined{ID: "b1", Reason: "status", ReceivedAt: now, Raw: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	base := newPaymentsServer(t, st, false)
	var p, b QuarantineView
	getJSON(t, "GET", base+"/admin/quarantine/p1", &p)
	getJSON(t, "GET", base+"/admin/quarantine/b1", &b)
	if p.Product != "payments" || p.Body != "" || b.Product != "batch" || b.Body != `{"x":1}` {
		t.Fatalf("payments entry %+v, batch entry %+v", p, b)
	}
	var page ListReply[QuarantineView]
	getJSON(t, "GET", base+"/admin/quarantine", &page)
	products := map[string]string{}
	for _, q := range page.Items {
		products[q.ID] = q.Product
	}
	if products["p1"] != "payments" || products["b1"] != "batch" {
		t.Fatalf("list products = %v", products)
	}
	var pp PaymentPage
	if getJSON(t, "GET", base+"/admin/payments/events", &pp); pp.Enabled || len(pp.Items) != 0 {
		t.Fatalf("payments off: %+v", pp)
	}
}
