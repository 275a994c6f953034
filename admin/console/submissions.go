package console

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// Submissions are CPF lists split into chunks, one batch each. The pages
// show how far each has come and, while chunks wait, why and until when,
// as `batchhook submissions list` and `batchhook submit` say it.

type submissionRow struct {
	admin.SubmissionSummaryView
	// Why says the state in words (why it waits; which chunks ended
	// badly).
	Why string
}

type submissionsData struct {
	Items []submissionRow
	Next  string
}

// submissions is GET /ui/submissions: a page of submissions, newest
// first, each with its chunks submitted of all.
func (c *Console) submissions(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Submissions", Nav: "submissions", CSRF: ss.csrf, SignedIn: true}
	path := "/admin/submissions?" + url.Values{"limit": {itoa(pageSize)}, "cursor": {r.URL.Query().Get("cursor")}}.Encode()
	var page admin.ListReply[admin.SubmissionSummaryView]
	if err := c.get(r, path, &page); err != nil {
		status, p := problemOf(err)
		v.Problem = "The submissions could not be listed: " + p
		c.render(w, status, "problem", v)
		return
	}
	d := submissionsData{Next: page.NextCursor}
	for _, s := range page.Items {
		d.Items = append(d.Items, submissionRow{SubmissionSummaryView: s, Why: submissionWhy(s)})
	}
	v.D = d
	c.render(w, http.StatusOK, "submissions", v)
}

// submissionWhy is what the state column says beyond the state.
func submissionWhy(s admin.SubmissionSummaryView) string {
	switch s.State {
	case admin.SubmissionWaiting:
		return waitingReason(s.Waiting)
	case admin.SubmissionIncomplete:
		out := ""
		for _, st := range []string{"failed", "submit_unknown"} {
			if n := s.ChunkState[st]; n > 0 {
				if out != "" {
					out += ", "
				}
				out += fmt.Sprintf("%d %s", n, st)
			}
		}
		return out
	}
	return ""
}

// The values of the waiting object's reason, as the admin API documents
// them (docs/operations.md); the console imports admin alone.
const (
	waitRateLimit = "rate_limit"
	waitInFlight  = "in_flight_cap"
	waitBackoff   = "backoff"
)

// waitingReason says in a few words what holds the chunks back.
func waitingReason(w *admin.WaitingView) string {
	switch {
	case w == nil:
		return ""
	case w.Reason == waitRateLimit:
		return fmt.Sprintf("the provider's rate limit (%d a minute)", w.PerMinute)
	case w.Reason == waitInFlight:
		return fmt.Sprintf("%d of %d batches in flight, the provider's limit: the next goes out when one finishes", w.InFlight, w.MaxInFlight)
	case w.Reason == waitBackoff:
		return "the provider refused or failed the last attempt: sent again with backoff"
	case w.Reason != "":
		return w.Reason
	}
	return "on its way"
}

type submissionData struct {
	S admin.SubmissionView
	// Submitted counts the chunks that became batches, Exported those
	// whose batch is exported.
	Submitted, Exported int
	// Why says what holds the waiting chunks back; Until is the next
	// attempt (zero: none known).
	Why   string
	Until time.Time
	// Resend: chunks an operator must decide about (failed,
	// submit_unknown), whose CPFs are still kept.
	Resend []admin.ChunkView
}

// submission is GET /ui/submissions/{id}: the submission's chunks, why
// they wait, and when they should be out.
func (c *Console) submission(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	v := view{Title: "Submission " + id, Nav: "submissions", CSRF: ss.csrf, SignedIn: true}
	var s admin.SubmissionView
	if err := c.get(r, "/admin/submissions/"+url.PathEscape(id), &s); err != nil {
		status, p := problemOf(err)
		if status == http.StatusNotFound {
			p = "No submission has the id “" + id + "”."
		}
		v.Problem = p
		c.render(w, status, "problem", v)
		return
	}
	d := submissionData{S: s}
	for _, ch := range s.Chunks {
		if ch.State == "submitted" {
			d.Submitted++
		}
		if ch.BatchState == "exported" {
			d.Exported++
		}
		if (ch.State == "failed" || ch.State == "submit_unknown") && !ch.CPFsPurged {
			d.Resend = append(d.Resend, ch)
		}
	}
	if s.Waiting != nil {
		d.Why, d.Until = waitingReason(s.Waiting), s.Waiting.Until
	}
	v.D = d
	c.render(w, http.StatusOK, "submission", v)
}
