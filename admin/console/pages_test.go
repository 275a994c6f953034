package console

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// The pages of more.go against a fake admin API: JSON written by hand in
// the admin view types, so each page is checked for what it shows and
// what it must never show.

const (
	pagesToken = "pages-test-admin-token"
	// pagesCPF is a valid CPF typed into the erasure form; pagesBadCPF an
	// invalid one. Neither may come back in any reply.
	pagesCPF    = "52998224725"
	pagesBadCPF = "11122233300"
	// pagesBodyMarker is in every body the fake API serves: no page may
	// show it.
	pagesBodyMarker = "BODY-MARKER-7f3a"
	pagesQID        = "3f9a1c2b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	pagesEvil       = `<img src=x onerror=alert(1)>`
)

var pagesT0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// pagesAPICall is one request the fake API received.
type pagesAPICall struct {
	Method, Path, Body string
}

// pagesAPI is the fake admin API.
type pagesAPI struct {
	mu    sync.Mutex
	calls []pagesAPICall
	// paymentsOn is payments_enabled in the payments list.
	paymentsOn bool
	// erasures are what GET /admin/erasures lists; POST appends.
	erasures []admin.ErasureView
}

func (a *pagesAPI) called(method, prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c.Method == method && strings.HasPrefix(c.Path, prefix) {
			n++
		}
	}
	return n
}

func (a *pagesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil { // the console's requests are client requests: no body is nil
		body, _ = io.ReadAll(r.Body)
	}
	a.mu.Lock()
	a.calls = append(a.calls, pagesAPICall{Method: r.Method, Path: r.URL.Path, Body: string(body)})
	a.mu.Unlock()
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+pagesToken {
		reply(http.StatusUnauthorized, map[string]string{"error": "token_mismatch"})
		return
	}
	sixty := int64(60)
	switch p := r.URL.Path; {
	case r.Method == http.MethodGet && p == "/admin/status":
		reply(http.StatusOK, admin.StatusView{Ready: true, Warnings: []string{},
			PaymentSinks: []admin.PaymentSinkStatusView{{Name: "kafka", Backlog: 417, OldestAgeSeconds: &sixty}}})
	case r.Method == http.MethodGet && p == "/admin/quarantine":
		reply(http.StatusOK, admin.ListReply[admin.QuarantineView]{NextCursor: "cur-q-2", Items: []admin.QuarantineView{
			{ID: pagesQID, Reason: "total_found > total_requested " + pagesEvil, Attempt: 3, ReceivedAt: pagesT0, Product: "batch", BatchID: "bat_0042"},
			{ID: strings.Repeat("b", 64), Reason: "not one JSON object", Attempt: 1, ReceivedAt: pagesT0, Product: "payments"},
		}})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/admin/quarantine/"):
		id := strings.TrimPrefix(p, "/admin/quarantine/")
		if !strings.HasPrefix(pagesQID, id) {
			reply(http.StatusNotFound, map[string]string{"error": "not_found"})
			return
		}
		reply(http.StatusOK, admin.QuarantineView{ID: pagesQID, Reason: "total_found > total_requested", Attempt: 3, ReceivedAt: pagesT0,
			Product: "batch", BatchID: "bat_0042", Body: `{"batch_id":"bat_0042","note":"` + pagesBodyMarker + `"}`})
	case r.Method == http.MethodGet && p == "/admin/rejected":
		reply(http.StatusOK, admin.ListReply[admin.RejectedView]{Items: []admin.RejectedView{
			{ID: 7, ReceivedAt: pagesT0, Path: "/webhooks/batch-completed", Product: "batch", Reason: "mismatch", RemoteAddr: "203.0.113.9:4711",
				BodyLen: 1234, BodySHA256: strings.Repeat("c", 64)},
		}})
	case r.Method == http.MethodGet && p == "/admin/rejected/7":
		reply(http.StatusOK, admin.RejectedView{ID: 7, ReceivedAt: pagesT0, Path: "/webhooks/batch-completed", Product: "batch", Reason: "mismatch",
			Signature: pagesEvil, RemoteAddr: "203.0.113.9:4711", BodyLen: 1234, BodySHA256: strings.Repeat("c", 64),
			Body: []byte(pagesBodyMarker)})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/admin/rejected/"):
		reply(http.StatusNotFound, map[string]string{"error": "not_found"})
	case r.Method == http.MethodGet && p == "/admin/submissions":
		until := pagesT0.Add(20 * time.Second)
		reply(http.StatusOK, admin.ListReply[admin.SubmissionSummaryView]{Items: []admin.SubmissionSummaryView{
			{ID: "sub_waiting", CreatedAt: pagesT0, Valid: 4000, Chunks: 4, Submitted: 3, State: admin.SubmissionWaiting,
				ChunkState: map[string]int{"submitted": 3, "waiting": 1},
				Waiting: &admin.WaitingView{Wait: submit.Wait{Reason: submit.WaitBackoff, Until: until, MaxInFlight: 10, PerMinute: 30,
					ErrorKind: "auth", LastError: "401 from the provider", Hint: submit.Hint(submit.OutcomeAuth)}, QueuedChunks: 1,
					Estimate: admin.EstimateUnknown}},
			{ID: "sub_incomplete", CreatedAt: pagesT0, Valid: 1500, Chunks: 2, Submitted: 1, State: admin.SubmissionIncomplete,
				ChunkState: map[string]int{"submitted": 1, "submit_unknown": 1}},
		}})
	case r.Method == http.MethodGet && p == "/admin/submissions/sub_waiting":
		sent := pagesT0.Add(-time.Hour)
		done := pagesT0.Add(90 * time.Minute)
		reply(http.StatusOK, admin.SubmissionView{ID: "sub_waiting", CreatedAt: pagesT0, Lines: 4100, Valid: 4000, Duplicates: 60, Invalid: 40,
			Chunks: []admin.ChunkView{
				{SubmissionID: "sub_waiting", Index: 0, State: "submitted", CPFs: 1000, BatchID: "bat_a", BatchState: "exported", Attempts: 1, SentAt: &sent},
				{SubmissionID: "sub_waiting", Index: 1, State: "submitted", CPFs: 1000, BatchID: "bat_b", BatchState: "queued", Attempts: 1, SentAt: &sent},
				{SubmissionID: "sub_waiting", Index: 2, State: "submit_unknown", CPFs: 1000, Attempts: 2, LastError: "timeout after the request was sent"},
				{SubmissionID: "sub_waiting", Index: 3, State: "waiting", CPFs: 1000, Attempts: 1, LastError: "401 from the provider"},
			},
			Waiting: &admin.WaitingView{Wait: submit.Wait{Reason: submit.WaitRateLimit, Until: pagesT0.Add(time.Minute), InFlight: 2, MaxInFlight: 10,
				PerMinute: 30, ErrorKind: "auth", LastError: "401 from the provider", Hint: submit.Hint(submit.OutcomeAuth)},
				QueuedChunks: 5, EstimatedDoneAt: &done}})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/admin/submissions/"):
		reply(http.StatusNotFound, map[string]string{"error": "not_found"})
	case r.Method == http.MethodGet && p == "/admin/payments/events":
		a.mu.Lock()
		on := a.paymentsOn
		a.mu.Unlock()
		reply(http.StatusOK, admin.PaymentPage{Enabled: on, NextSince: 902, Items: []admin.PaymentEventView{
			{Seq: 901, ReceivedAt: pagesT0, Event: "transaction.updated", Attempt: 2, DedupKey: `fields:["tx_81","paid"]`, BodySHA256: strings.Repeat("d", 64), BodyLen: 512},
			{Seq: 902, ReceivedAt: pagesT0, Event: "transaction.created", Attempt: 1, DedupKey: "sha256:" + strings.Repeat("e", 64), BodyLen: 300, ErasedBy: "era_1"},
		}})
	case r.Method == http.MethodGet && p == "/admin/erasures":
		a.mu.Lock()
		items := append([]admin.ErasureView(nil), a.erasures...)
		a.mu.Unlock()
		reply(http.StatusOK, admin.ListReply[admin.ErasureView]{Items: items})
	case r.Method == http.MethodPost && p == "/admin/erasures":
		var req struct {
			CPF string `json:"cpf"`
		}
		if json.Unmarshal(body, &req) != nil || req.CPF == "" {
			reply(http.StatusBadRequest, map[string]string{"error": `want a JSON body {"cpf":"123.456.789-09"} (either form)`})
			return
		}
		if req.CPF != pagesCPF {
			reply(http.StatusBadRequest, map[string]string{"error": "invalid CPF"})
			return
		}
		done := pagesT0
		e := admin.ErasureView{ID: "era_77", State: "done", CPFHMAC: "hmac", RequestedAt: pagesT0, DoneAt: &done, Touched: true,
			Batches: []store.ErasedBatch{{BatchID: "bat_a", Items: 2, Version: 2, Sinks: []store.SinkReceipt{{Sink: "s3", Received: store.ReceivedDelivered, Version: 1}}}},
			Chunks:  []store.ErasedChunk{}, Bodies: []store.ErasedBody{{Kind: "quarantine", ID: pagesQID}}}
		a.mu.Lock()
		a.erasures = append(a.erasures, e)
		a.mu.Unlock()
		reply(http.StatusOK, e)
	default:
		reply(http.StatusNotFound, map[string]string{"error": "not_found"})
	}
}

// pagesClient is a signed-in browser: its cookie jar holds the session,
// and it does not follow redirects, so a test sees each Location.
type pagesClient struct {
	t      *testing.T
	srv    *httptest.Server
	hc     *http.Client
	api    *pagesAPI
	logs   *bytes.Buffer
	bodies []string // every reply body, in order
}

func newPagesClient(t *testing.T) *pagesClient {
	t.Helper()
	api := &pagesAPI{}
	logs := &bytes.Buffer{}
	lg := zerolog.New(logs)
	c, err := New(Options{API: api, Token: func() []byte { return []byte(pagesToken) }, Logger: lg, Refused: lg,
		Now: func() time.Time { return pagesT0.Add(5 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	pc := &pagesClient{t: t, srv: srv, api: api, logs: logs,
		hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, _ := pc.post("/ui/login", url.Values{"token": {pagesToken}})
	if res.StatusCode != http.StatusSeeOther || len(jar.Cookies(res.Request.URL)) == 0 {
		t.Fatalf("sign-in: %d, cookies %v", res.StatusCode, jar.Cookies(res.Request.URL))
	}
	return pc
}

func (pc *pagesClient) do(req *http.Request) (*http.Response, string) {
	pc.t.Helper()
	res, err := pc.hc.Do(req)
	if err != nil {
		pc.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.bodies = append(pc.bodies, string(raw))
	return res, string(raw)
}

func (pc *pagesClient) get(path string) (*http.Response, string) {
	pc.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, pc.srv.URL+path, nil)
	return pc.do(req)
}

func (pc *pagesClient) post(path string, form url.Values) (*http.Response, string) {
	pc.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, pc.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return pc.do(req)
}

// page GETs path and wants 200.
func (pc *pagesClient) page(path string) string {
	pc.t.Helper()
	res, body := pc.get(path)
	if res.StatusCode != http.StatusOK {
		pc.t.Fatalf("GET %s: %d\n%s", path, res.StatusCode, body)
	}
	return body
}

var pagesCSRFRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the session's CSRF token, read from a page's form.
func (pc *pagesClient) csrf() string {
	pc.t.Helper()
	m := pagesCSRFRe.FindStringSubmatch(pc.page("/ui/erasures"))
	if m == nil {
		pc.t.Fatal("no CSRF token on /ui/erasures")
	}
	return m[1]
}

// pagesHas fails for each want that body lacks.
func pagesHas(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// pagesLacks fails for each bad that body holds.
func pagesLacks(t *testing.T, what, body string, bads ...string) {
	t.Helper()
	for _, b := range bads {
		if strings.Contains(body, b) {
			t.Errorf("%s holds %q", what, b)
		}
	}
}

func TestPagesQuarantine(t *testing.T) {
	pc := newPagesClient(t)
	list := pc.page("/ui/quarantine")
	pagesHas(t, "quarantine list", list,
		`<a href="/ui/quarantine" aria-current="page">`,
		`href="/ui/quarantine/`+pagesQID+`"`,
		`href="/ui/batches/bat_0042"`,
		"&lt;img src=x onerror=alert(1)&gt;",
		"payments",
		`href="/ui/quarantine?cursor=cur-q-2"`)
	pagesLacks(t, "quarantine list", list, pagesEvil)

	// A prefix of the id sends the browser to the whole one.
	res, _ := pc.get("/ui/quarantine/" + pagesQID[:8])
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/quarantine/"+pagesQID {
		t.Errorf("a prefix: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	entry := pc.page("/ui/quarantine/" + pagesQID)
	body := `{"batch_id":"bat_0042","note":"` + pagesBodyMarker + `"}`
	pagesHas(t, "quarantine entry", entry,
		"total_found &gt; total_requested",
		`<a href="/ui/batches/bat_0042">bat_0042</a>`,
		"2026-03-04 10:00:00 UTC",
		`<dd data-field="attempt">3</dd>`,
		"batchhook quarantine show "+pagesQID,
		"batchhook track bat_0042",
		"retries this for ever",
		itoa(len(body))+" bytes, sha256")
	pagesLacks(t, "quarantine entry", entry, pagesBodyMarker)

	res, nf := pc.get("/ui/quarantine/ffff")
	if res.StatusCode != http.StatusNotFound || !strings.Contains(nf, "No quarantined delivery") {
		t.Errorf("an unknown id: %d\n%s", res.StatusCode, nf)
	}
}

func TestPagesRejected(t *testing.T) {
	pc := newPagesClient(t)
	list := pc.page("/ui/rejected")
	pagesHas(t, "rejected list", list,
		`<a href="/ui/rejected" aria-current="page">`,
		`href="/ui/rejected/7"`,
		"/webhooks/batch-completed",
		"203.0.113.9:4711",
		"does not match this body and secret",
		"1234 bytes")

	entry := pc.page("/ui/rejected/7")
	pagesHas(t, "rejected entry", entry,
		"&lt;img src=x onerror=alert(1)&gt;",
		"does not match this body and secret",
		"mismatch",
		"1234 bytes, sha256",
		strings.Repeat("c", 64),
		"BATCHHOOK_SIGNING_SECRET",
		"batchhook verify --rejected 7 --secret-file F",
		"203.0.113.9:4711")
	pagesLacks(t, "rejected entry", entry, pagesEvil, pagesBodyMarker)

	if res, _ := pc.get("/ui/rejected/999"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown id: %d", res.StatusCode)
	}
}

func TestPagesSubmissions(t *testing.T) {
	pc := newPagesClient(t)
	list := pc.page("/ui/submissions")
	pagesHas(t, "submissions list", list,
		`<a href="/ui/submissions" aria-current="page">`,
		`<progress value="3" max="4">`,
		`<progress value="1" max="2">`,
		"3 of 4",
		"refused the API key: fix it in BATCHHOOK_API_KEY_FILE",
		"1 submit_unknown",
		`href="/ui/submissions/sub_waiting"`)

	one := pc.page("/ui/submissions/sub_waiting")
	pagesHas(t, "submission", one,
		// Submitted 2 of 4 chunks; 1 of 4 batches exported.
		`<progress value="2" max="4">`,
		`<progress value="1" max="4">`,
		`href="/ui/batches/bat_a"`,
		"submit_unknown",
		"timeout after the request was sent",
		"rate_limit",
		"the provider&#39;s rate limit (30 a minute)",
		`<span class="kind">auth</span> 401 from the provider`,
		"fix it in BATCHHOOK_API_KEY_FILE",
		"5 (this submission",
		"2026-03-04 11:30:00 UTC",
		"batchhook submissions resend sub_waiting 2")
	pagesLacks(t, "submission", one, "batchhook submissions resend sub_waiting 3")

	if res, _ := pc.get("/ui/submissions/nope"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown id: %d", res.StatusCode)
	}
}

func TestPagesPayments(t *testing.T) {
	pc := newPagesClient(t)
	off := pc.page("/ui/payments")
	pagesHas(t, "payments (off)", off, `<a href="/ui/payments" aria-current="page">`, "Payments are off", "901", "transaction.updated")

	pc.api.mu.Lock()
	pc.api.paymentsOn = true
	pc.api.mu.Unlock()
	on := pc.page("/ui/payments")
	pagesHas(t, "payments", on,
		`<td class="num">901</td>`,
		"transaction.updated",
		"fields:[&#34;tx_81&#34;,&#34;paid&#34;]",
		"512 bytes",
		"erased by",
		`data-field="payment_sink.kafka.backlog">417<`,
		`href="/ui/payments?since=902"`)
	pagesLacks(t, "payments", on, "Payments are off", strings.Repeat("d", 64))
}

func TestPagesErasure(t *testing.T) {
	pc := newPagesClient(t)
	form := pc.page("/ui/erasures")
	pagesHas(t, "erasure form", form,
		`<a href="/ui/erasures" aria-current="page">`,
		`type="text" id="cpf" name="cpf" inputmode="numeric" autocomplete="off"`,
		"I understand this deletes this person's data everywhere batchhook keeps it",
		"No erasure has been made")
	csrf := pc.csrf()

	// Without the CSRF token, or unconfirmed: refused, the API not called.
	res, _ := pc.post("/ui/erasures", url.Values{"cpf": {pagesCPF}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("without csrf: %d, want 403", res.StatusCode)
	}
	res, _ = pc.post("/ui/erasures", url.Values{"csrf": {"not-the-token"}, "cpf": {pagesCPF}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("with a wrong csrf: %d, want 403", res.StatusCode)
	}
	res, body := pc.post("/ui/erasures", url.Values{"csrf": {csrf}, "cpf": {pagesCPF}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "tick the box") {
		t.Errorf("unconfirmed: %d\n%s", res.StatusCode, body)
	}
	if n := pc.api.called(http.MethodPost, "/admin/erasures"); n != 0 {
		t.Fatalf("the API got %d erasure(s) from refused forms", n)
	}

	// An invalid CPF: said, never repeated.
	res, body = pc.post("/ui/erasures", url.Values{"csrf": {csrf}, "cpf": {pagesBadCPF}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("an invalid CPF: %d, want 400", res.StatusCode)
	}
	pagesHas(t, "invalid CPF reply", body, "that is not a valid CPF")

	// A valid one: the API gets it as JSON, the browser a 303 to the list.
	res, _ = pc.post("/ui/erasures", url.Values{"csrf": {csrf}, "cpf": {pagesCPF}, "confirm": {"yes"}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || loc != "/ui/erasures?done=era_77" {
		t.Fatalf("erase: %d to %q", res.StatusCode, loc)
	}
	var sent []string
	pc.api.mu.Lock()
	for _, c := range pc.api.calls {
		if c.Method == http.MethodPost {
			sent = append(sent, c.Body)
		}
	}
	pc.api.mu.Unlock()
	if len(sent) != 2 || sent[1] != `{"cpf":"`+pagesCPF+`"}` {
		t.Errorf("the API got %q", sent)
	}
	done := pc.page(loc)
	pagesHas(t, "after the erasure", done, "The erasure is recorded", `id="done"`, "era_77", `href="/ui/batches/bat_a"`, "s3 (delivered, version 1)")

	// Nothing of the CPFs anywhere: not a reply, not a Location, not a log.
	for _, v := range []string{pagesCPF, pagesBadCPF, "529.982.247-25"} {
		for i, b := range pc.bodies {
			if strings.Contains(b, v) {
				t.Errorf("reply %d holds the CPF %s", i, v)
			}
		}
		if strings.Contains(loc, v) {
			t.Errorf("the Location holds the CPF %s", v)
		}
		if strings.Contains(pc.logs.String(), v) {
			t.Errorf("the log holds the CPF %s", v)
		}
	}
}

// TestPagesSignedOut: every page of more.go sends a stranger to the
// sign-in, and the erasure form is refused without a session.
func TestPagesSignedOut(t *testing.T) {
	pc := newPagesClient(t)
	jar, _ := cookiejar.New(nil)
	pc.hc.Jar = jar
	for _, p := range []string{"/ui/quarantine", "/ui/quarantine/" + pagesQID, "/ui/rejected", "/ui/rejected/7", "/ui/submissions",
		"/ui/submissions/sub_waiting", "/ui/payments", "/ui/erasures"} {
		res, _ := pc.get(p)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
			t.Errorf("GET %s signed out: %d to %q", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
	res, _ := pc.post("/ui/erasures", url.Values{"csrf": {"x"}, "cpf": {pagesCPF}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("POST signed out: %d, want 403", res.StatusCode)
	}
	if n := pc.api.called(http.MethodGet, "/admin/"); n != 0 {
		t.Errorf("the API was asked %d time(s) for a stranger", n)
	}
	if n := pc.api.called(http.MethodPost, "/admin/"); n != 0 {
		t.Errorf("the API got %d POST(s) for a stranger", n)
	}
}
