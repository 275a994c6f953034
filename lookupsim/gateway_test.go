package lookupsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	uuidV4    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	stampForm = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$`)
	twoPlaces = regexp.MustCompile(`^\d+\.\d{2}$`)
)

// goodCPF has correct check digits.
const goodCPF = "52998224725"

func depositBody(amount string) []byte {
	return []byte(`{"amount":` + amount + `,"merchant_transaction_id":"m-1","first_name":"João","last_name":"Silva",` +
		`"email":"joao@example.com","document_number":"` + goodCPF + `","message":"deposit","ip_address":"203.0.113.7","phone_number":"+5511999990000"}`)
}

func withdrawalBody(amount string) []byte {
	return []byte(`{"merchant_transaction_id":"m-2","amount":` + amount + `,"pix_key_type":"email","pix_key_value":"joao@example.com",` +
		`"pix_message":"withdrawal","first_name":"João","last_name":"Silva","document_number":"` + goodCPF + `"}`)
}

// gw calls the gateway with optional extra headers.
func gw(t *testing.T, method, url string, body []byte, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// txOf decodes {"transaction":{…}} into a generic map, refusing any other
// top-level member.
func txOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("reply %s: %v", body, err)
	}
	tx, ok := top["transaction"].(map[string]any)
	if len(top) != 1 || !ok {
		t.Fatalf("reply is not {\"transaction\":{…}}: %s", body)
	}
	return tx
}

func keys(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(sortStrings(ks), ",")
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// checkShape holds a transaction to docs/provider-api.md §2.4: every field present
// with its JSON type and form.
func checkShape(t *testing.T, tx map[string]any, flow, eventType, status string) map[string]any {
	t.Helper()
	wantTx := "created_at,document_number,e2e_id,email,error,events,first_name,flow_type,id,last_name,merchant_id,merchant_transaction_id,processor_id,source,status,transaction_type,updated_at,user_id"
	if got := keys(tx); got != wantTx {
		t.Fatalf("transaction members %s\nwant %s", got, wantTx)
	}
	for _, k := range []string{"id", "merchant_id", "user_id", "processor_id"} {
		if s, _ := tx[k].(string); !uuidV4.MatchString(s) {
			t.Errorf("%s %v is not a v4 UUID", k, tx[k])
		}
	}
	for k, v := range map[string]string{"transaction_type": "pix", "status": status, "flow_type": flow, "source": "player"} {
		if tx[k] != v {
			t.Errorf("%s = %v, want %s", k, tx[k], v)
		}
	}
	if tx["error"] != nil || tx["e2e_id"] != nil {
		t.Errorf("error %v, e2e_id %v: want null", tx["error"], tx["e2e_id"])
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if s, _ := tx[k].(string); !stampForm.MatchString(s) {
			t.Errorf("%s %v is not YYYY-MM-DDThh:mm:ss+0000", k, tx[k])
		}
	}
	evs, _ := tx["events"].([]any)
	if len(evs) != 1 {
		t.Fatalf("events %v: want one", tx["events"])
	}
	ev, _ := evs[0].(map[string]any)
	wantEv := "amount,batch_id,created_at,event_type,id,ip_address,pix_key_type,pix_key_value,pix_message,qrcode,qrcode_image,success,updated_at"
	if flow == flowCashin {
		wantEv = "amount,batch_id,created_at,event_type,id,ip_address,pix_key_type,pix_key_value,pix_message,processor_transaction_id,qrcode,qrcode_image,success,updated_at"
	}
	if got := keys(ev); got != wantEv {
		t.Fatalf("event members %s\nwant %s", got, wantEv)
	}
	if s, _ := ev["id"].(string); !uuidV4.MatchString(s) {
		t.Errorf("event id %v", ev["id"])
	}
	if _, ok := ev["success"].(bool); !ok || ev["event_type"] != eventType || ev["batch_id"] != nil {
		t.Errorf("event success %v, event_type %v, batch_id %v", ev["success"], ev["event_type"], ev["batch_id"])
	}
	if s, _ := ev["amount"].(string); !twoPlaces.MatchString(s) {
		t.Errorf("amount %v is not a string with two places", ev["amount"])
	}
	for _, k := range []string{"qrcode", "pix_message", "created_at", "updated_at"} {
		if _, ok := ev[k].(string); !ok {
			t.Errorf("event %s %v is not a string", k, ev[k])
		}
	}
	img, _ := ev["qrcode_image"].(string)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(img, "data:image/png;base64,"))
	if !strings.HasPrefix(img, "data:image/png;base64,") || err != nil {
		t.Fatalf("qrcode_image is not a PNG data URI: %.40s… (%v)", img, err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("qrcode_image is not a valid PNG: %v", err)
	}
	return ev
}

func TestDepositShape(t *testing.T) {
	s := startSim(t, Options{Now: newFakeClock().Now})
	r := gw(t, http.MethodPost, s.URL()+"/api/pix/charge", depositBody("10.5"))
	if r.status != http.StatusCreated || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("charge: %d %s", r.status, r.body)
	}
	tx := txOf(t, r.body)
	ev := checkShape(t, tx, "cashin", "auth", "pending")
	for k, v := range map[string]any{"merchant_transaction_id": "m-1", "first_name": "João", "last_name": "Silva",
		"email": "joao@example.com", "document_number": goodCPF, "created_at": "2026-11-22T10:00:00+0000"} {
		if tx[k] != v {
			t.Errorf("%s = %v, want %v", k, tx[k], v)
		}
	}
	ptid, _ := ev["processor_transaction_id"].(string)
	if !uuidV4.MatchString(ptid) {
		t.Fatalf("processor_transaction_id %v", ev["processor_transaction_id"])
	}
	for k, v := range map[string]any{"amount": "10.50", "ip_address": "203.0.113.7", "pix_message": "deposit",
		"pix_key_type": nil, "pix_key_value": nil, "qrcode": s.URL() + "/api/transactions/" + ptid + "/pay"} {
		if ev[k] != v {
			t.Errorf("event %s = %v, want %v", k, ev[k], v)
		}
	}
	if st := s.Stats(); st.GatewayRequests != 1 || st.TransactionsCreated != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWithdrawalShape(t *testing.T) {
	s := startSim(t, Options{SandboxURL: "https://sandbox.example/"})
	r := gw(t, http.MethodPost, s.URL()+"/api/pix/pay", withdrawalBody("7"))
	if r.status != http.StatusCreated {
		t.Fatalf("pay: %d %s", r.status, r.body)
	}
	tx := txOf(t, r.body)
	ev := checkShape(t, tx, "cashout", "payment", "pending")
	if tx["email"] != nil {
		t.Errorf("email %v: a withdrawal has none, want null", tx["email"])
	}
	for k, v := range map[string]any{"amount": "7.00", "ip_address": nil, "pix_key_type": "email",
		"pix_key_value": "joao@example.com", "pix_message": "withdrawal",
		"qrcode": "https://sandbox.example/api/transactions/" + tx["id"].(string) + "/receive"} {
		if ev[k] != v {
			t.Errorf("event %s = %v, want %v", k, ev[k], v)
		}
	}
}

func TestAmountKeepsItsDigits(t *testing.T) {
	for in, want := range map[string]string{"10": "10.00", "10.5": "10.50", "0.01": "0.01", "123456789.99": "123456789.99"} {
		if got := formatAmount(in); got != want {
			t.Errorf("formatAmount(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestGatewayValidation(t *testing.T) {
	s := startSim(t, Options{})
	dep, wd := s.URL()+"/api/pix/charge", s.URL()+"/api/pix/pay"
	replace := func(b []byte, old, new string) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	cases := []struct {
		name, url string
		body      []byte
		field     string
	}{
		{"amount as a string", dep, replace(depositBody("1"), `"amount":1`, `"amount":"10.50"`), "amount"},
		{"three decimals", dep, depositBody("10.505"), "amount"},
		{"exponent", dep, depositBody("1e2"), "amount"},
		{"negative", dep, depositBody("-5"), "amount"},
		{"zero", dep, depositBody("0.00"), "amount"},
		{"missing field", dep, replace(depositBody("1"), `"phone_number":"+5511999990000"`, `"x":1`), "x"},
		{"unknown field", wd, replace(withdrawalBody("1"), `{`, `{"email":"a@b.c",`), "email"},
		{"missing", wd, replace(withdrawalBody("1"), `"pix_message":"withdrawal",`, ``), "pix_message"},
		{"repeated", dep, replace(depositBody("1"), `{`, `{"message":"x",`), "message"},
		{"number as a name", dep, replace(depositBody("1"), `"first_name":"João"`, `"first_name":5`), "first_name"},
		{"null email", dep, replace(depositBody("1"), `"email":"joao@example.com"`, `"email":null`), "email"},
		{"empty name", wd, replace(withdrawalBody("1"), `"last_name":"Silva"`, `"last_name":" "`), "last_name"},
		{"bad CPF", dep, replace(depositBody("1"), goodCPF, "52998224726"), "document_number"},
		{"long field", dep, replace(depositBody("1"), `"message":"deposit"`, `"message":"`+strings.Repeat("a", 300)+`"`), "message"},
		{"not an object", dep, []byte(`[1]`), ""},
		{"trailing data", dep, append(depositBody("1"), `{}`...), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := gw(t, http.MethodPost, c.url, c.body)
			var e struct {
				Error string `json:"error"`
				Field string `json:"field"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil || r.status != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400 with a JSON error", r.status, r.body)
			}
			if e.Field != c.field || (c.field != "" && !strings.Contains(e.Error, c.field)) {
				t.Fatalf("error %q field %q, want the field %q named", e.Error, e.Field, c.field)
			}
			if strings.Contains(e.Error, goodCPF) || strings.Contains(e.Error, "João") {
				t.Fatalf("error %q echoes personal data", e.Error)
			}
		})
	}
	big := replace(depositBody("1"), `"message":"deposit"`, `"message":"`+strings.Repeat("a", maxGatewayBody)+`"`)
	if r := gw(t, http.MethodPost, dep, big); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d %s", r.status, r.body)
	}
	if st := s.Stats(); st.TransactionsCreated != 0 || st.GatewayRequests != len(cases)+1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestGatewayAuthHeader(t *testing.T) {
	if _, err := New(Options{APIKey: "k", GatewayAuthHeader: "X-Api-Key"}); err == nil {
		t.Fatal("a header without a value was accepted")
	}
	if _, err := New(Options{APIKey: "k", GatewayAuthHeader: "Bad Header", GatewayAuthValue: []byte("v")}); err == nil {
		t.Fatal("an invalid header name was accepted")
	}
	s := startSim(t, Options{GatewayAuthHeader: "X-Gateway-Key", GatewayAuthValue: []byte("gw-sécret")})
	url := s.URL() + "/api/pix/charge"
	for name, h := range map[string][]string{"none": nil, "wrong": {"X-Gateway-Key", "gw-secret"}, "other header": {"Authorization", "gw-sécret"}} {
		if r := gw(t, http.MethodPost, url, depositBody("1"), h...); r.status != http.StatusUnauthorized || errorOf(t, r) != "unauthorized" {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
	}
	r := gw(t, http.MethodPost, url, depositBody("1"), "x-gateway-key", "gw-sécret")
	if r.status != http.StatusCreated {
		t.Fatalf("with the header: %d %s", r.status, r.body)
	}
	// The sandbox's URLs are opened in a browser: no header needed.
	ev := txOf(t, r.body)["events"].([]any)[0].(map[string]any)
	if r := gw(t, http.MethodGet, ev["qrcode"].(string), nil); r.status != http.StatusOK {
		t.Fatalf("simulation: %d %s", r.status, r.body)
	}
}

// TestPaymentSignatureVector: the payment webhook's signature is the
// document's scheme under the payments secret, checked against a vector
// computed with openssl (testdata/README.md).
func TestPaymentSignatureVector(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "payment_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(filepath.Join("testdata", "payments_secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{APIKey: "k", SigningSecret: []byte("batch secret"), PaymentsWebhookURL: "http://127.0.0.1:1/", PaymentsSigningSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	const want = "N2Y4MTczMGExMmZhYTEyM2I1M2E4YmEyMTA2OGMyZGE2YTgwOWQ1ZGJlMDYzNjcwMTlhMWQ2OTYyNjhkMWZjOQ=="
	if h := s.paymentWebhookLocked("id", EventTransactionPaid, body); h.sig != want {
		t.Fatalf("signature %s, want %s", h.sig, want)
	}
}
