package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	for _, ok := range []string{"10", "10.5", "10.50", "0.01", "0.1", "999999999999999.99"} {
		if a, err := ParseAmount(ok); err != nil || string(a) != ok {
			t.Errorf("ParseAmount(%q) = %q, %v", ok, a, err)
		}
	}
	for _, bad := range []string{"", "0", "0.00", "-1", "+1", "1e2", "10,50", "10.505", "010", ".5", "5.", "1 0", " 1", "NaN", "0x10", "1.2.3"} {
		if _, err := ParseAmount(bad); !errors.Is(err, ErrAmount) {
			t.Errorf("ParseAmount(%q) accepted", bad)
		}
	}
}

func TestAmountIsSentAsTheDigitsGiven(t *testing.T) {
	a, err := ParseAmount("10.10")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Withdrawal{Amount: a})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"amount":10.10,`) {
		t.Fatalf("%s: the amount is not the JSON number 10.10", b)
	}
}

func TestSimulationURL(t *testing.T) {
	const sb = "http://sandbox.example:8081"
	cases := []struct{ arg, action, want string }{
		{"https://s.example/api/transactions/abc/receive", Receive, "https://s.example/api/transactions/abc/receive"},
		{"https://s.example/api/transactions/abc/receive", Refund, "https://s.example/api/transactions/abc/refund"},
		{"https://s.example/api/transactions/abc/receive/", Refund, "https://s.example/api/transactions/abc/refund"},
		{"https://s.example/api/transactions/abc/receive?token=t", Refund, "https://s.example/api/transactions/abc/refund?token=t"},
		{"http://s.example/p/x/pay", Pay, "http://s.example/p/x/pay"},
		{"3f1c-ref", Receive, sb + "/api/transactions/3f1c-ref/receive"},
		{"3f1c-ref", Refund, sb + "/api/transactions/3f1c-ref/refund"},
		{"3f1c ref", Pay, sb + "/api/transactions/3f1c%20ref/pay"},
	}
	for _, c := range cases {
		got, err := SimulationURL(c.arg, sb, c.action)
		if err != nil || got != c.want {
			t.Errorf("SimulationURL(%q, %s) = %q, %v; want %q", c.arg, c.action, got, err, c.want)
		}
	}
	for _, bad := range []struct{ arg, action string }{
		{"ftp://s.example/a/receive", Receive}, {"https:///a/receive", Refund}, {"https://s.example/", Refund},
		{"a/b", Receive}, {"", Pay}, {"..", Pay}, {"a?b", Refund}, {"abc", "cancel"},
	} {
		if got, err := SimulationURL(bad.arg, sb, bad.action); err == nil {
			t.Errorf("SimulationURL(%q, %s) = %q, want an error", bad.arg, bad.action, got)
		}
	}
	if _, err := SimulationURL("ref", "", Receive); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("a bare ref without a sandbox URL: %v", err)
	}
}

func TestMasks(t *testing.T) {
	for in, want := range map[string]string{"João": "J.", " Álvaro ": "Á.", "": ""} {
		if got := MaskName(in); got != want {
			t.Errorf("MaskName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"joao@example.com": "j***@example.com", "nope": "***", "@x": "***", "": ""} {
		if got := MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
	s, err := Summarize([]byte(`{"transaction":{"id":"t1","first_name":"João","last_name":"Silva","email":"joao@example.com",` +
		`"document_number":"52998224725","status":"pending","events":[{"amount":"1.00","qrcode":"http://x/api/transactions/p1/pay","processor_transaction_id":"p1"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "J. S." || s.Email != "j***@example.com" || s.Document != "***.982.247-**" || s.ProcessorTransactionID != "p1" || s.Amount != "1.00" {
		t.Fatalf("%+v", s)
	}
	if _, err := Summarize([]byte(`{"error":"x"}`)); err == nil {
		t.Fatal("a reply without a transaction was summarized")
	}
}

func TestClient(t *testing.T) {
	var got struct {
		path, header, body string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.path, got.header, got.body = r.URL.Path, r.Header.Get("X-Gateway-Key"), string(b)
		switch r.URL.Path {
		case "/api/pix/charge":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"transaction":{"id":"t"}}`))
		case "/api/pix/pay":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid: document 529.982.247-25 ` + strings.Repeat("x", 400) + `"}`))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>" + strings.Repeat("y", 1000)))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, srv.URL, "X-Gateway-Key", []byte("k"))
	ctx := context.Background()
	reply, err := c.CreateDeposit(ctx, Deposit{Amount: "10.50", MerchantTransactionID: "m", DocumentNumber: "52998224725"})
	if err != nil || string(reply) != `{"transaction":{"id":"t"}}` {
		t.Fatalf("deposit: %s %v", reply, err)
	}
	want := `{"amount":10.50,"merchant_transaction_id":"m","first_name":"","last_name":"","email":"","document_number":"52998224725","message":"","ip_address":"","phone_number":""}`
	if got.body != want || got.header != "k" {
		t.Fatalf("sent %s with header %q\nwant %s", got.body, got.header, want)
	}
	_, err = c.CreateWithdrawal(ctx, Withdrawal{Amount: "1"})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 400 || !strings.HasPrefix(se.Reason, "invalid: document ***.***.***-** xxx") || len(se.Reason) > maxReason+4 {
		t.Fatalf("withdrawal: %v", err)
	}
	if _, err := c.Simulate(ctx, srv.URL+"/other"); !errors.As(err, &se) || se.Status != 502 || se.Reason != "Bad Gateway" {
		t.Fatalf("502 with HTML: %v", err)
	}
	if got.header != "" {
		t.Fatal("the auth header went to a sandbox URL")
	}
	if _, err := c.Simulate(ctx, srv.URL+"/redirect"); !errors.As(err, &se) || se.Status != http.StatusFound {
		t.Fatalf("redirect followed: %v", err)
	}
	if _, err := New("", "", "", nil).CreateDeposit(ctx, Deposit{Amount: "1"}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("no gateway URL: %v", err)
	}
}
