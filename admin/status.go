package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/store"
)

// Counters is what GET /admin/status reads from the store: counts and
// oldest entries kept in indexes, so a status costs a few reads however
// many records the database holds. Errors are the store's (a failed store
// refuses every read).
type Counters interface {
	Counts() (map[store.State]int, error)
	OldestPending() (time.Time, bool, error)
	// OldestPendingByState has an entry for each non-final state that
	// holds a batch: when its oldest was recorded.
	OldestPendingByState() (map[store.State]time.Time, error)
	ChunkCounts() (map[store.ChunkState]int, error)
	DeliveryCounts() (map[string]map[store.DeliveryState]int, error)
	OldestPendingDeliveries() (map[string]time.Time, error)
	PaymentBacklog(sink string) (int, time.Time, error)
}

var _ Counters = (*store.Store)(nil)

// Facts is what only the running daemon knows, for GET /admin/status:
// its build and start, its counters since start, its configuration's
// sinks, its view of the provider and how the previous run ended. The
// daemon fills it on every request from values it already holds.
type Facts struct {
	Build     BuildView
	StartedAt time.Time
	// LastAccepted has one entry per webhook served (batch; payments when
	// it is on), in that order: the time of the last accepted webhook,
	// zero when none was since start.
	LastAccepted []ProductTime
	// NotFoundRequests counts requests to paths the webhook listener
	// does not serve, since start; LastNotFound is when the last came
	// (zero when none did).
	NotFoundRequests uint64
	LastNotFound     time.Time
	// Unauthorized counts the webhooks refused with 401 (a signature that
	// did not verify) since start, batch and payments together;
	// LastUnauthorized is when the last came (zero when none did).
	Unauthorized     uint64
	LastUnauthorized time.Time
	// Quarantined counts the signed webhooks kept in the quarantine since
	// start (batch and payments); LastQuarantined is when the last came,
	// LastQuarantine its product and (masked) reason.
	Quarantined     uint64
	LastQuarantined time.Time
	LastQuarantine  QuarantineCause
	// ListenAddr and AdminAddr are the addresses the webhook and admin
	// listeners are bound to, DataDir the data directory as an absolute
	// path: which daemon answers, when another one may hold the ports.
	ListenAddr, AdminAddr, DataDir string
	// Sinks are the configured delivery sinks (file is the export itself,
	// with no outbox); PaymentSinks those that take payment events, when
	// payments are on.
	Sinks, PaymentSinks []string
	Provider            ProviderView
	// PreviousRun is how the previous run ended when it did not stop
	// cleanly; nil after a clean stop or on a first start.
	PreviousRun *PreviousRunView
}

// QuarantineCause is why a webhook was quarantined: its product (batch
// or payments) and the entry's reason.
type QuarantineCause struct {
	Product string `json:"product"`
	Reason  string `json:"reason"`
}

// ProductTime is the time of the last accepted webhook of one product.
type ProductTime struct {
	Product string
	At      time.Time
}

// BuildView is the running binary's build.
type BuildView struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

// ProviderView is what the daemon saw of the provider's API since start.
type ProviderView struct {
	// Misconfigured: every call since start failed and the last ones all
	// answered 404; Problem says so in words, with the variable to check.
	Misconfigured bool   `json:"misconfigured"`
	Problem       string `json:"problem,omitempty"`
	// LastAnswer is the status class of the last answer (2xx, 401, 404,
	// none: no answer, …); empty before the first call.
	LastAnswer string `json:"last_answer,omitempty"`
	// KeyRefused: the last KeyRefusals answers in a row were 401 or 403.
	KeyRefused  bool `json:"key_refused"`
	KeyRefusals int  `json:"key_refusals,omitempty"`
}

// PreviousRunView is the run marker's account of a run that did not stop
// cleanly: why, and when it failed (or started, when it recorded no end).
type PreviousRunView struct {
	Reason string     `json:"reason"`
	When   *time.Time `json:"when"`
}

// StatusView is the reply of GET /admin/status: one summary of the
// daemon's health for an operator (batchhook status) or a script. Ages are
// whole seconds at the time of the reply; a time and its age are null
// when there is none.
type StatusView struct {
	Ready          bool      `json:"ready"`
	NotReadyReason string    `json:"not_ready_reason,omitempty"`
	Build          BuildView `json:"build"`
	StartedAt      time.Time `json:"started_at"`
	UptimeSeconds  int64     `json:"uptime_seconds"`
	// ListenAddr, AdminAddr and DataDir say which daemon this is (the
	// started line's listen_addr, admin_addr and data_dir).
	ListenAddr string `json:"listen_addr"`
	AdminAddr  string `json:"admin_addr"`
	DataDir    string `json:"data_dir"`
	// LastAccepted is keyed by product: batch, and payments when served.
	LastAccepted     map[string]LastAcceptedView `json:"last_accepted"`
	NotFoundRequests uint64                      `json:"not_found_requests"`
	LastNotFound     LastSeenView                `json:"last_not_found"`
	// UnauthorizedWebhooks counts webhooks refused with 401 since start
	// (batch and payments).
	UnauthorizedWebhooks uint64       `json:"unauthorized_webhooks"`
	LastUnauthorized     LastSeenView `json:"last_unauthorized"`
	// QuarantinedWebhooks counts signed webhooks kept in the quarantine
	// since start (batch and payments).
	QuarantinedWebhooks uint64                  `json:"quarantined_webhooks"`
	LastQuarantined     LastSeenView            `json:"last_quarantined"`
	Queue               QueueView               `json:"queue"`
	Chunks              map[string]int          `json:"chunks"`
	Sinks               []SinkStatusView        `json:"sinks"`
	PaymentSinks        []PaymentSinkStatusView `json:"payment_sinks,omitempty"`
	Provider            ProviderView            `json:"provider"`
	PreviousRunFailed   *PreviousRunView        `json:"previous_run_failed"`
	// Warnings name each problem found and what to do about it; empty
	// (never null) when there is none.
	Warnings []string `json:"warnings"`
}

// LastSeenView is when the last request of a kind came and its age; both
// null when none came since start.
type LastSeenView struct {
	At         *time.Time `json:"at"`
	AgeSeconds *int64     `json:"age_seconds"`
}

// LastAcceptedView is the last accepted webhook of one product.
type LastAcceptedView = LastSeenView

// lastSeen is the view of at, null when at is zero.
func lastSeen(at, now time.Time) LastSeenView {
	if at.IsZero() {
		return LastSeenView{}
	}
	at, age := at.UTC(), seconds(now.Sub(at))
	return LastSeenView{At: &at, AgeSeconds: &age}
}

// QueueView is the batches by state, the age of the oldest one not yet in
// a final state, the same age for each non-final state that holds a batch
// (a state without one is absent; the map is empty, not null, when none
// does), and those in flight (submitted or tracked, waiting for their
// batch.completed). Ages count from when a batch was first recorded.
type QueueView struct {
	Batches          map[string]int   `json:"batches"`
	OldestAgeSeconds *int64           `json:"oldest_pending_age_seconds"`
	OldestAgeByState map[string]int64 `json:"oldest_age_seconds_by_state"`
	InFlight         int              `json:"in_flight"`
}

// SinkStatusView is one delivery sink's outbox.
type SinkStatusView struct {
	Name             string `json:"name"`
	Pending          int    `json:"pending"`
	Failed           int    `json:"failed"`
	OldestAgeSeconds *int64 `json:"oldest_pending_age_seconds"`
}

// PaymentSinkStatusView is one payment sink's backlog of logged events.
type PaymentSinkStatusView struct {
	Name             string `json:"name"`
	Backlog          int    `json:"backlog"`
	OldestAgeSeconds *int64 `json:"oldest_pending_age_seconds"`
}

// QuietAfter is how long the batch webhook may stay silent while batches
// are in flight before the status warns: the provider may have stopped
// sending, or sends to another URL. It counts from the start when nothing
// was accepted since, like batchhook_last_accepted_timestamp_seconds.
const QuietAfter = time.Hour

// RecentWithin is how recent the last webhook refused with 401, or the
// last request to an unknown path, must be for the status to warn of it.
// A wrong signing secret or webhook URL repeats with every delivery, so it
// keeps the warning up; one mistaken request (a client pointed at the
// webhook port) lets it go after this long instead of marking the daemon
// unhealthy until a restart. The counts since start stay in the summary.
const RecentWithin = time.Hour

// status is GET /admin/status. It answers 200 whatever it finds (the
// findings are the content); a part the store cannot read is left empty
// and said in the warnings.
func (s *Server) status(c echo.Context) error {
	if s.o.Status == nil {
		return fail(c, http.StatusServiceUnavailable, "status not available")
	}
	now := s.o.Now()
	f := s.o.Status()
	v := StatusView{Ready: true, Build: f.Build, StartedAt: f.StartedAt.UTC(), UptimeSeconds: seconds(now.Sub(f.StartedAt)),
		ListenAddr: f.ListenAddr, AdminAddr: f.AdminAddr, DataDir: f.DataDir,
		LastAccepted: map[string]LastAcceptedView{}, NotFoundRequests: f.NotFoundRequests, LastNotFound: lastSeen(f.LastNotFound, now),
		UnauthorizedWebhooks: f.Unauthorized, LastUnauthorized: lastSeen(f.LastUnauthorized, now), Chunks: map[string]int{},
		QuarantinedWebhooks: f.Quarantined, LastQuarantined: lastSeen(f.LastQuarantined, now),
		Sinks: []SinkStatusView{}, Provider: f.Provider, PreviousRunFailed: f.PreviousRun, Warnings: []string{}}
	if err := s.o.Ready(); err != nil {
		v.Ready, v.NotReadyReason = false, err.Error()
	}
	for _, p := range f.LastAccepted {
		v.LastAccepted[p.Product] = lastSeen(p.At, now)
	}
	var unreadable []string
	s.statusQueue(&v, now, &unreadable)
	s.statusSinks(&v, f, now, &unreadable)
	v.Warnings = warnings(&v, f, now, unreadable)
	if w := s.guard.guessingWarning(now); w != "" {
		v.Warnings = append(v.Warnings, w)
	}
	return c.JSON(http.StatusOK, v)
}

// statusQueue fills the batches and chunks by state, and the oldest
// pending ages, from the counters and the pending index.
func (s *Server) statusQueue(v *StatusView, now time.Time, unreadable *[]string) {
	v.Queue.Batches = map[string]int{}
	if counts, err := s.o.Store.Counts(); err != nil {
		*unreadable = append(*unreadable, err.Error())
	} else {
		for _, st := range store.States {
			v.Queue.Batches[string(st)] = counts[st]
		}
		v.Queue.InFlight = counts[store.StateSubmitted] + counts[store.StateTracked]
	}
	if at, ok, err := s.o.Store.OldestPending(); err != nil {
		*unreadable = append(*unreadable, err.Error())
	} else if ok {
		age := seconds(now.Sub(at))
		v.Queue.OldestAgeSeconds = &age
	}
	v.Queue.OldestAgeByState = map[string]int64{}
	if oldest, err := s.o.Store.OldestPendingByState(); err != nil {
		*unreadable = append(*unreadable, err.Error())
	} else {
		for st, at := range oldest {
			v.Queue.OldestAgeByState[string(st)] = seconds(now.Sub(at))
		}
	}
	if chunks, err := s.o.Store.ChunkCounts(); err != nil {
		*unreadable = append(*unreadable, err.Error())
	} else {
		for _, st := range store.ChunkStates {
			v.Chunks[string(st)] = chunks[st]
		}
	}
}

// statusSinks fills each configured sink's outbox and each payment sink's
// backlog.
func (s *Server) statusSinks(v *StatusView, f Facts, now time.Time, unreadable *[]string) {
	if len(f.Sinks) > 0 {
		counts, cerr := s.o.Store.DeliveryCounts()
		oldest, oerr := s.o.Store.OldestPendingDeliveries()
		for _, err := range []error{cerr, oerr} {
			if err != nil {
				*unreadable = append(*unreadable, err.Error())
			}
		}
		for _, name := range f.Sinks {
			sv := SinkStatusView{Name: name, Pending: counts[name][store.DeliveryPending], Failed: counts[name][store.DeliveryFailed]}
			if at, ok := oldest[name]; ok && sv.Pending > 0 {
				age := seconds(now.Sub(at))
				sv.OldestAgeSeconds = &age
			}
			v.Sinks = append(v.Sinks, sv)
		}
	}
	for _, name := range f.PaymentSinks {
		n, at, err := s.o.Store.PaymentBacklog(name)
		if err != nil {
			*unreadable = append(*unreadable, err.Error())
			continue
		}
		pv := PaymentSinkStatusView{Name: name, Backlog: n}
		if n > 0 && !at.IsZero() {
			age := seconds(now.Sub(at))
			pv.OldestAgeSeconds = &age
		}
		v.PaymentSinks = append(v.PaymentSinks, pv)
	}
}

// warnings names each problem the summary shows, each with what to do:
// the CLI command and the route (other clients than the CLI read them, so
// no CLI flag is named).
// They hold counts, names of sinks, times and batchhook's own error text,
// never a CPF or a secret.
func warnings(v *StatusView, f Facts, now time.Time, unreadable []string) []string {
	out := []string{}
	for _, e := range unreadable {
		out = append(out, "the store's counts could not be read ("+e+"): the summary is incomplete")
	}
	if n := f.Unauthorized; n > 0 && recent(f.LastUnauthorized, now) {
		secret, events := "BATCHHOOK_SIGNING_SECRET[_FILE]", "webhook_rejected"
		if _, ok := v.LastAccepted["payments"]; ok {
			secret += " (payments: BATCHHOOK_PAYMENTS_SIGNING_SECRET[_FILE])"
			events += ", payment_rejected"
		}
		out = append(out, fmt.Sprintf("%s refused with 401 (bad signature) since start, the last %s ago: the provider may sign with "+
			"another secret than %s; batchhook rejected list (GET /admin/rejected), then batchhook verify on one of them "+
			"with the secret the provider uses (%s in the log)",
			countOf(int(n), "webhook", "webhooks"), FormatAge(now.Sub(f.LastUnauthorized)), secret, events))
	}
	if n := f.Quarantined; n > 0 && recent(f.LastQuarantined, now) {
		what, event := "signed notification", "webhook_invalid"
		if n != 1 {
			what += "s"
		}
		if f.LastQuarantine.Product == "payments" {
			event = "payment_invalid"
		}
		out = append(out, fmt.Sprintf("%d %s quarantined since start, the last %s ago (%s: %s): each is answered 400 and retried by the provider "+
			"for ever, and nothing in it is recorded; batchhook quarantine list (GET /admin/quarantine, the console's Quarantine page), "+
			"then batchhook quarantine show ID for the next step (%s in the log)",
			n, what, FormatAge(now.Sub(f.LastQuarantined)), f.LastQuarantine.Product, f.LastQuarantine.Reason, event))
	}
	if n := f.NotFoundRequests; n > 0 && recent(f.LastNotFound, now) {
		out = append(out, fmt.Sprintf("%s to unknown paths on the webhook listener since start, the last %s ago: is the provider's webhook URL right? "+
			"(webhook_unknown_path in the log names the path)", countOf(int(n), "request", "requests"), FormatAge(now.Sub(f.LastNotFound))))
	}
	if f.Provider.Problem != "" {
		out = append(out, f.Provider.Problem)
	}
	if f.Provider.KeyRefused {
		out = append(out, fmt.Sprintf("the provider refused the API key on its last %s (401/403): put the right key in "+
			"BATCHHOOK_API_KEY_FILE and send SIGHUP", countOf(f.Provider.KeyRefusals, "answer", "answers")))
	}
	if p := f.PreviousRun; p != nil {
		when := ""
		if p.When != nil {
			when = " at " + p.When.UTC().Format(time.RFC3339)
		}
		out = append(out, "the previous run did not stop cleanly"+when+": "+p.Reason+
			" (previous_run_failed in the log; docs/operations.md, when a write fails)")
	}
	for _, sv := range v.Sinks {
		if sv.Failed > 0 {
			out = append(out, fmt.Sprintf("%s failed for sink %s: batchhook deliveries list (GET /admin/deliveries?state=failed&sink=%s), "+
				"then redeliver each once the sink is fixed", countOf(sv.Failed, "delivery", "deliveries"), sv.Name, sv.Name))
		}
	}
	if n := v.Chunks[string(store.ChunkUnknown)]; n > 0 {
		out = append(out, fmt.Sprintf("%s submit_unknown (the provider may have them; never resent on its own): batchhook submissions unknown "+
			"(GET /admin/chunks?state=submit_unknown)",
			countOf(n, "chunk", "chunks")))
	}
	if n := v.Queue.InFlight; n > 0 {
		since, what := f.StartedAt, "since start"
		for _, p := range f.LastAccepted {
			if p.Product == "batch" && !p.At.IsZero() {
				since, what = p.At, "for"
			}
		}
		if quiet := now.Sub(since); quiet >= QuietAfter {
			phrase := "no batch webhook accepted " + what + " " + FormatAge(quiet)
			if what == "since start" {
				phrase = "no batch webhook accepted in the " + FormatAge(quiet) + " since start"
			}
			out = append(out, fmt.Sprintf("%s while %s in flight: is the provider still sending to this URL? (batchhook_reconciled_total rising says the polls find them)",
				phrase, countOf(n, "batch is", "batches are")))
		}
	}
	return out
}

// recent says whether at is within RecentWithin of now; a zero at (none
// came) is not.
func recent(at, now time.Time) bool { return !at.IsZero() && now.Sub(at) < RecentWithin }

// countOf is n with its noun, singular or plural.
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// seconds is d in whole seconds, never negative (clocks step).
func seconds(d time.Duration) int64 { return max(int64(d/time.Second), 0) }

// FormatAge writes an age the way an operator reads it at a glance: 45s,
// 12m, 2h5m, 3d4h.
func FormatAge(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		if m := int(d % time.Hour / time.Minute); m > 0 {
			return fmt.Sprintf("%dh%dm", int(d/time.Hour), m)
		}
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}
