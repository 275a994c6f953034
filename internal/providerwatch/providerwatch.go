// Package providerwatch notices a provider address that cannot be right:
// every call answered 404 and none succeeded since start. That is what a
// wrong BATCHHOOK_API_BASE_URL looks like (…/api/v1 twice, a path typo):
// each batch is retried for NOT_FOUND_GRACE and then abandoned, each chunk
// fails, and nothing else says why. A single 404 is normal (results may lag
// the notification, a tracked id may be mistyped), so the watch waits for
// a run of them with no success at all before it speaks.
package providerwatch

import (
	"fmt"
	"net/http"
	"sync"
)

// DefaultThreshold is how many 404s in a row, with no 2xx since start,
// make the watch report a misconfiguration.
const DefaultThreshold = 5

// Classes are the status classes Class returns: the label values of the
// responses counter, each started at 0.
var Classes = []string{"2xx", "3xx", "401", "403", "404", "429", "4xx", "5xx", "none"}

// Class maps an HTTP status to a bounded label value; 0 (no response:
// refused, timed out, dropped) is "none".
func Class(status int) string {
	switch {
	case status == 0:
		return "none"
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusNotFound, status == http.StatusTooManyRequests:
		return fmt.Sprint(status)
	case status >= 200 && status < 300:
		return "2xx"
	case status >= 300 && status < 400:
		return "3xx"
	case status >= 400 && status < 500:
		return "4xx"
	default:
		return "5xx"
	}
}

// Options configures a Watch. Every func may be nil.
type Options struct {
	// Threshold is the run of 404s that counts; 0 = DefaultThreshold.
	Threshold int
	// Count is told the class of every response (for a metric).
	Count func(class string)
	// Misconfigured is called once each time the watch starts reporting a
	// misconfiguration, with the problem in words (for a log line).
	Misconfigured func(problem string)
}

// Watch follows the provider's answers. It is safe for concurrent use.
type Watch struct {
	o       Options
	mu      sync.Mutex
	streak  int    // 404s in a row
	ok      bool   // a 2xx came since start
	problem string // non-empty while misconfigured
	// last is the class of the last answer ("" before the first call);
	// refused counts the 401/403 answers in a row, the API key refused.
	last    string
	refused int
}

// New returns a Watch.
func New(o Options) *Watch {
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	return &Watch{o: o}
}

// Observe records one call's status (0 when no response came) and its URL
// without a query (scheme://host/path: it never holds a secret).
func (w *Watch) Observe(status int, url string) {
	if w.o.Count != nil {
		w.o.Count(Class(status))
	}
	w.mu.Lock()
	var report string
	w.last = Class(status)
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		w.refused++
	} else {
		w.refused = 0
	}
	switch {
	case status >= 200 && status < 300:
		w.ok, w.streak, w.problem = true, 0, ""
	case status == http.StatusNotFound:
		w.streak++
		if !w.ok && w.streak >= w.o.Threshold && w.problem == "" {
			w.problem = fmt.Sprintf("the provider answered 404 to the last %d calls and none succeeded since start "+
				"(last: %s): check BATCHHOOK_API_BASE_URL (batchhook appends /api/v1/batches to it)", w.streak, url)
			report = w.problem
		}
	default:
		w.streak = 0
	}
	w.mu.Unlock()
	if report != "" && w.o.Misconfigured != nil {
		w.o.Misconfigured(report)
	}
}

// Problem returns the misconfiguration in words, or "" when there is none.
func (w *Watch) Problem() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.problem
}

// IsMisconfigured reports whether Problem is non-empty (for a gauge).
func (w *Watch) IsMisconfigured() bool { return w.Problem() != "" }

// Last returns the class of the last answer (as Class) and how many
// answers in a row refused the API key (401 or 403, as the fetcher and the
// submitter read them); last is "" before the first call.
func (w *Watch) Last() (last string, refused int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.refused
}
