package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// statusServer is an admin server on a real store whose daemon facts and
// readiness the test sets.
type statusServer struct {
	url   string
	st    *store.Store
	mu    sync.Mutex
	facts Facts
	ready error
}

func (s *statusServer) set(f Facts, ready error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.facts, s.ready = f, ready
}

func newStatusServer(t *testing.T, token string, now time.Time) *statusServer {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, errors.New("no results in this test") }})
	if err != nil {
		t.Fatal(err)
	}
	ss := &statusServer{st: st}
	s, err := New(Options{Store: st, Token: func() []byte { return []byte(token) }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: 168 * time.Hour, Metrics: http.NotFoundHandler(), Logger: zerolog.Nop(), Now: func() time.Time { return now },
		Ready:  func() error { ss.mu.Lock(); defer ss.mu.Unlock(); return ss.ready },
		Status: func() Facts { ss.mu.Lock(); defer ss.mu.Unlock(); return ss.facts }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ss.url = srv.URL
	return ss
}

func getStatus(t *testing.T, url, token string) (int, StatusView, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/admin/status", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v StatusView
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return resp.StatusCode, v, string(raw)
}

// A fresh daemon's status is ready, without warnings, with every state
// counted at 0 and a null last webhook; the route needs the token.
func TestStatusOfAFreshDaemon(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := newStatusServer(t, "tok", now)
	s.set(Facts{Build: BuildView{Version: "v1", Commit: "c1", Go: "go1"}, StartedAt: now.Add(-10 * time.Second),
		LastAccepted: []ProductTime{{Product: "batch"}}, Sinks: []string{"http"}}, nil)
	if code, _, raw := getStatus(t, s.url, ""); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s, want 401", code, raw)
	}
	code, v, raw := getStatus(t, s.url, "tok")
	if code != http.StatusOK || !v.Ready || v.NotReadyReason != "" || len(v.Warnings) != 0 {
		t.Fatalf("fresh status = %d %s; want ready without warnings", code, raw)
	}
	if v.Build.Version != "v1" || v.UptimeSeconds != 10 || v.Queue.OldestAgeSeconds != nil || v.Queue.InFlight != 0 {
		t.Fatalf("fresh status = %s", raw)
	}
	if la, ok := v.LastAccepted["batch"]; !ok || la.At != nil || la.AgeSeconds != nil {
		t.Fatalf("last_accepted = %s, want batch with a null time", raw)
	}
	for _, st := range store.States {
		if n, ok := v.Queue.Batches[string(st)]; !ok || n != 0 {
			t.Fatalf("batches[%s] = %d %v in %s", st, n, ok, raw)
		}
	}
	if len(v.Sinks) != 1 || v.Sinks[0] != (SinkStatusView{Name: "http"}) || v.Chunks["submit_unknown"] != 0 {
		t.Fatalf("sinks/chunks = %s", raw)
	}
	if !strings.Contains(raw, `"warnings":[]`) || !strings.Contains(raw, `"previous_run_failed":null`) {
		t.Fatalf("warnings must be [] and previous_run_failed null in %s", raw)
	}
}

// Each problem the daemon and the store know shows in the summary and as a
// warning that says what to do; no CPF reaches the reply.
func TestStatusWarnsOfEachProblem(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := newStatusServer(t, "", now)
	st := s.st
	st.SetSinks([]string{"http"})
	exportFor(t, st, "b_failed", now.Add(-time.Hour))
	d, _, err := st.NextDelivery("http", now, func(string) bool { return false })
	if err != nil || d == nil {
		t.Fatalf("next delivery: %v %v", d, err)
	}
	if err := st.FailDelivery("b_failed", "http", d.Generation, "status", "HTTP 410"); err != nil {
		t.Fatal(err)
	}
	exportFor(t, st, "b_pending", now.Add(-30*time.Minute))
	exportFor(t, st, "b_pending2", now.Add(-20*time.Minute))
	if _, _, err := st.Track("b_far", now.Add(time.Hour), now.Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	const cpf = "52998224725"
	if _, err := st.AddSubmission(store.Submission{ID: "s1"}, [][]string{{cpf}}, now); err != nil {
		t.Fatal(err)
	}
	c, err := st.NextChunk()
	if err != nil || c == nil {
		t.Fatalf("next chunk: %v %v", c, err)
	}
	if err := st.ChunkSending(c.Seq, c.Index, now); err != nil {
		t.Fatal(err)
	}
	if err := st.ChunkGiveUp(c.Seq, c.Index, store.ChunkUnknown, "timeout after the request was sent", now); err != nil {
		t.Fatal(err)
	}
	failedAt := now.Add(-5 * time.Hour)
	s.set(Facts{StartedAt: now.Add(-2*time.Hour - 5*time.Minute), LastAccepted: []ProductTime{{Product: "batch"}, {Product: "payments", At: now.Add(-90 * time.Second)}},
		NotFoundRequests: 12, LastNotFound: now.Add(-3 * time.Minute), Unauthorized: 4, LastUnauthorized: now.Add(-2 * time.Minute), Sinks: []string{"http"}, PaymentSinks: []string{"file"},
		Provider:    ProviderView{Misconfigured: true, Problem: "the provider answered 404 to the last 5 calls: check BATCHHOOK_API_BASE_URL", LastAnswer: "401", KeyRefused: true, KeyRefusals: 3},
		PreviousRun: &PreviousRunView{Reason: "failed commit: no space left on device", When: &failedAt}},
		errors.New("store not writable: disk full"))

	code, v, raw := getStatus(t, s.url, "")
	if code != http.StatusOK || v.Ready || v.NotReadyReason != "store not writable: disk full" {
		t.Fatalf("status = %d %s; want not ready with the reason", code, raw)
	}
	if strings.Contains(raw, cpf) {
		t.Fatalf("the reply holds a chunk's CPF: %s", raw)
	}
	if v.Queue.Batches["exported"] != 3 || v.Queue.Batches["tracked"] != 1 || v.Queue.InFlight != 1 ||
		v.Queue.OldestAgeSeconds == nil || *v.Queue.OldestAgeSeconds != 3*3600 {
		t.Fatalf("queue = %+v in %s", v.Queue, raw)
	}
	if len(v.Sinks) != 1 || v.Sinks[0].Pending != 2 || v.Sinks[0].Failed != 1 || v.Sinks[0].OldestAgeSeconds == nil {
		t.Fatalf("sinks = %+v", v.Sinks)
	}
	if len(v.PaymentSinks) != 1 || v.PaymentSinks[0] != (PaymentSinkStatusView{Name: "file"}) {
		t.Fatalf("payment sinks = %+v", v.PaymentSinks)
	}
	if la := v.LastAccepted["payments"]; la.At == nil || la.AgeSeconds == nil || *la.AgeSeconds != 90 {
		t.Fatalf("last_accepted payments = %s", raw)
	}
	if v.Chunks["submit_unknown"] != 1 || v.PreviousRunFailed == nil || !v.Provider.KeyRefused {
		t.Fatalf("chunks, previous run or provider missing in %s", raw)
	}
	want := []string{
		"4 webhooks refused with 401 (bad signature) since start, the last 2m ago: the provider may sign with another secret than " +
			"BATCHHOOK_SIGNING_SECRET[_FILE] (payments: BATCHHOOK_PAYMENTS_SIGNING_SECRET[_FILE]); batchhook rejected list (GET /admin/rejected)",
		"12 requests to unknown paths on the webhook listener since start, the last 3m ago: is the provider's webhook URL right? (webhook_unknown_path",
		"check BATCHHOOK_API_BASE_URL",
		"the provider refused the API key on its last 3 answers (401/403): put the right key in BATCHHOOK_API_KEY_FILE and send SIGHUP",
		"the previous run did not stop cleanly at 2026-11-24T07:00:00Z: failed commit: no space left on device",
		"1 delivery failed for sink http: batchhook deliveries list (GET /admin/deliveries?state=failed&sink=http)",
		"1 chunk submit_unknown (the provider may have them; never resent on its own): batchhook submissions unknown",
		"no batch webhook accepted in the 2h5m since start while 1 batch is in flight",
	}
	if len(v.Warnings) != len(want) {
		t.Fatalf("warnings = %q, want %d", v.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(v.Warnings[i], w) {
			t.Errorf("warning %d = %q, want it to contain %q", i, v.Warnings[i], w)
		}
	}

	// A batch webhook accepted lately ends the silence warning.
	f := s.facts
	f.LastAccepted = []ProductTime{{Product: "batch", At: now.Add(-time.Minute)}}
	s.set(f, nil)
	if _, v, raw := getStatus(t, s.url, ""); !v.Ready || strings.Contains(strings.Join(v.Warnings, "\n"), "no batch webhook") {
		t.Fatalf("after a recent webhook: %s", raw)
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 45 * time.Second: "45s", 12*time.Minute + 5*time.Second: "12m",
		2 * time.Hour: "2h", 2*time.Hour + 5*time.Minute: "2h5m", 76 * time.Hour: "3d4h", -time.Second: "0s"} {
		if got := FormatAge(d); got != want {
			t.Errorf("FormatAge(%s) = %q, want %q", d, got, want)
		}
	}
}

// A 401 or an unknown path warns while the last one is recent: a wrong
// secret or URL repeats with every delivery, one mistaken request must not
// keep the daemon unhealthy until a restart. The counts since start and the
// last times stay in the reply either way.
func TestStatusWarnsOfRecentRefusalsAndUnknownPathsOnly(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := newStatusServer(t, "", now)
	base := Facts{StartedAt: now.Add(-3 * time.Hour), LastAccepted: []ProductTime{{Product: "batch"}}}

	recentF := base
	recentF.NotFoundRequests, recentF.LastNotFound = 1, now.Add(-RecentWithin+time.Minute)
	recentF.Unauthorized, recentF.LastUnauthorized = 1, now.Add(-30*time.Second)
	s.set(recentF, nil)
	_, v, raw := getStatus(t, s.url, "")
	if len(v.Warnings) != 2 ||
		!strings.HasPrefix(v.Warnings[0], "1 webhook refused with 401 (bad signature) since start, the last 30s ago: the provider may sign with another secret than BATCHHOOK_SIGNING_SECRET[_FILE]; ") ||
		!strings.HasSuffix(v.Warnings[0], "(webhook_rejected in the log)") ||
		!strings.HasPrefix(v.Warnings[1], "1 request to unknown paths on the webhook listener since start, the last 59m ago") {
		t.Fatalf("recent 401 and unknown path: warnings %q", v.Warnings)
	}
	if v.UnauthorizedWebhooks != 1 || v.LastUnauthorized.AgeSeconds == nil || *v.LastUnauthorized.AgeSeconds != 30 ||
		v.LastNotFound.At == nil || !v.LastNotFound.At.Equal(recentF.LastNotFound) {
		t.Fatalf("recent: counts and times = %s", raw)
	}

	old := base
	old.NotFoundRequests, old.LastNotFound = 1, now.Add(-RecentWithin)
	old.Unauthorized, old.LastUnauthorized = 3, now.Add(-2*time.Hour)
	s.set(old, nil)
	_, v, raw = getStatus(t, s.url, "")
	if len(v.Warnings) != 0 {
		t.Fatalf("a 401 and an unknown path over %s ago still warn: %q", RecentWithin, v.Warnings)
	}
	if v.NotFoundRequests != 1 || v.UnauthorizedWebhooks != 3 || v.LastUnauthorized.AgeSeconds == nil || *v.LastUnauthorized.AgeSeconds != 7200 {
		t.Fatalf("old: the counts since start must stay: %s", raw)
	}

	s.set(base, nil)
	if _, _, raw := getStatus(t, s.url, ""); !strings.Contains(raw, `"unauthorized_webhooks":0,"last_unauthorized":{"at":null,"age_seconds":null}`) ||
		!strings.Contains(raw, `"last_not_found":{"at":null,"age_seconds":null}`) {
		t.Fatalf("none since start: want 0 and null times in %s", raw)
	}
}

// The queue's oldest_age_seconds_by_state has the age of each non-final
// state's oldest batch, counted from when it was first recorded, and no
// entry for a state without a batch; it is {} (never null) when no batch
// is pending.
func TestStatusOldestAgeByState(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := newStatusServer(t, "", now)
	s.set(Facts{StartedAt: now.Add(-time.Minute), LastAccepted: []ProductTime{{Product: "batch", At: now}}}, nil)
	if _, _, raw := getStatus(t, s.url, ""); !strings.Contains(raw, `"oldest_age_seconds_by_state":{}`) {
		t.Fatalf("no batch pending: %s; want oldest_age_seconds_by_state {}", raw)
	}
	st := s.st
	for _, r := range []struct {
		id  string
		ago time.Duration
	}{{"b_fetching", 50 * time.Minute}, {"b_queued", 40 * time.Minute}, {"b_queued2", 10 * time.Minute}} {
		if _, err := st.Record(store.Notification{BatchID: r.id, Status: "completed", ReceivedAt: now.Add(-r.ago)}); err != nil {
			t.Fatal(err)
		}
	}
	if b, _, _ := st.Lease(now); b == nil || b.ID != "b_fetching" {
		t.Fatalf("leased %v, want b_fetching", b)
	}
	if _, _, err := st.Track("b_tracked", now.Add(time.Hour), now.Add(-90*time.Second)); err != nil {
		t.Fatal(err)
	}
	exportFor(t, st, "b_exported", now.Add(-5*time.Hour))
	_, v, raw := getStatus(t, s.url, "")
	want := map[string]int64{"fetching": 3000, "queued": 2400, "tracked": 90}
	if len(v.Queue.OldestAgeByState) != len(want) {
		t.Fatalf("oldest_age_seconds_by_state = %v in %s, want %v", v.Queue.OldestAgeByState, raw, want)
	}
	for state, age := range want {
		if got, ok := v.Queue.OldestAgeByState[state]; !ok || got != age {
			t.Fatalf("oldest_age_seconds_by_state[%s] = %d %v in %s, want %d", state, got, ok, raw, age)
		}
	}
	if v.Queue.OldestAgeSeconds == nil || *v.Queue.OldestAgeSeconds != 3000 {
		t.Fatalf("oldest_pending_age_seconds = %v in %s, want 3000 (b_fetching)", v.Queue.OldestAgeSeconds, raw)
	}
}

// A signed webhook quarantined within the hour is a warning that quotes
// the last one's product and reason and says where to look; an hour later
// only the counts since start remain.
func TestStatusWarnsOfARecentQuarantine(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := newStatusServer(t, "", now)
	f := Facts{StartedAt: now.Add(-3 * time.Hour), LastAccepted: []ProductTime{{Product: "batch"}}}
	f.Quarantined, f.LastQuarantined = 2, now.Add(-5*time.Minute)
	f.LastQuarantine = QuarantineCause{Product: "batch", Reason: `invalid notification: status "bogus" is not one of completed, partial, expired, failed`}
	s.set(f, nil)
	_, v, raw := getStatus(t, s.url, "")
	if len(v.Warnings) != 1 || !strings.HasPrefix(v.Warnings[0], `2 signed notifications quarantined since start, the last 5m ago (batch: invalid notification: status "bogus"`) ||
		!strings.Contains(v.Warnings[0], "batchhook quarantine list (GET /admin/quarantine, the console's Quarantine page)") ||
		!strings.HasSuffix(v.Warnings[0], "(webhook_invalid in the log)") {
		t.Fatalf("warnings %q", v.Warnings)
	}
	if v.QuarantinedWebhooks != 2 || v.LastQuarantined.AgeSeconds == nil || *v.LastQuarantined.AgeSeconds != 300 {
		t.Fatalf("counts and times: %s", raw)
	}
	f.LastQuarantined = now.Add(-RecentWithin)
	s.set(f, nil)
	if _, v, _ := getStatus(t, s.url, ""); len(v.Warnings) != 0 || v.QuarantinedWebhooks != 2 {
		t.Fatalf("a quarantine %s ago still warns: %q", RecentWithin, v.Warnings)
	}
}
