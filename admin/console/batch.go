package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// step is one line of a batch's timeline.
type step struct {
	At   *time.Time
	What string
	// Detail says more; Kind and Error are a failure's kind and message.
	Detail, Kind, Error string
	// Class is ok, bad or busy (waiting for something).
	Class string
}

type batchData struct {
	B        admin.BatchView
	Timeline []step
	// CanRefetch, CanRetry: the actions the batch's state allows;
	// Sinks are those it can be redelivered to (exported only).
	CanRefetch, CanRetry bool
	Sinks                []string
}

// batch is GET /ui/batches/{id}: the batch's record and deliveries as a
// timeline, and the actions its state allows.
func (c *Console) batch(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	v := view{Title: "Batch", Nav: "batches", CSRF: ss.csrf, SignedIn: true, Flash: doneMessage(r)}
	var b admin.BatchView
	if err := c.get(r, "/admin/batches/"+url.PathEscape(id), &b); err != nil {
		status, p := problemOf(err)
		if status == http.StatusNotFound {
			p = "No batch has the id “" + id + "”."
		}
		v.Problem = p
		c.render(w, status, "problem", v)
		return
	}
	if b.ID != id { // a prefix: the page's address names the whole id
		http.Redirect(w, r, "/ui/batches/"+url.PathEscape(b.ID), http.StatusSeeOther)
		return
	}
	v.Title = "Batch " + b.ID
	d := batchData{B: b, Timeline: timeline(b)}
	switch b.State {
	case "exported", "abandoned", "purged":
		d.CanRefetch = true
	case "queued":
		d.CanRetry = b.NextAttemptAt != nil && b.NextAttemptAt.After(c.o.Now())
	}
	if b.State == "exported" && !b.ExportRemoved {
		var s admin.StatusView
		if err := c.get(r, "/admin/status", &s); err == nil {
			for _, sk := range s.Sinks {
				d.Sinks = append(d.Sinks, sk.Name)
			}
		}
	}
	v.D = d
	c.render(w, http.StatusOK, "batch", v)
}

// timeline lays a batch's record out in the order of the pipeline.
func timeline(b admin.BatchView) []step {
	var out []step
	if b.SubmittedAt != nil {
		out = append(out, step{At: b.SubmittedAt, What: "Submitted to the provider", Class: "ok",
			Detail: fmt.Sprintf("submission %s, %d CPFs", b.SubmissionID, b.CPFCount)})
	}
	if !b.ReceivedAt.IsZero() {
		at := b.ReceivedAt
		s := step{At: &at, What: "batch.completed recorded", Class: "ok",
			Detail: fmt.Sprintf("status %s, from %s; requested %s, found %s, not found %s; delivery attempt %d",
				b.Status, orDash(b.Source), num(b.TotalRequested), num(b.TotalFound), num(b.TotalNotFound), b.Attempt)}
		if len(b.Flags) > 0 {
			s.Detail += "; flags: " + strings.Join(b.Flags, ", ")
		}
		out = append(out, s)
	} else if b.State == "submitted" || b.State == "tracked" {
		s := step{What: "Waiting for its batch.completed", Class: "busy", Detail: fmt.Sprintf("%d poll(s) so far", b.PollAttempts)}
		if b.NextPollAt != nil {
			s.Detail += "; next poll at " + b.NextPollAt.UTC().Format(time.RFC3339)
		}
		out = append(out, s)
	}
	if b.FetchAttempts > 0 || b.Pages > 0 || b.State == "queued" || b.State == "fetching" {
		s := step{What: "Fetch", Class: "ok", Kind: b.ErrorKind, Error: b.LastError,
			Detail: fmt.Sprintf("%d page(s), %d item(s) fetched", b.Pages, b.Items)}
		if b.FetchAttempts > 0 {
			s.Detail += fmt.Sprintf("; %d attempt(s) failed since the last success", b.FetchAttempts)
		}
		switch {
		case b.State == "fetching":
			s.What, s.Class = "Fetching now", "busy"
		case b.State == "queued" && b.NextAttemptAt != nil:
			s.What, s.Class = "Fetch waiting to retry", "busy"
			s.At = b.NextAttemptAt
			s.Detail += "; the time shown is its next attempt"
		case b.State == "queued":
			s.What, s.Class = "Queued for fetching", "busy"
		}
		if b.LastError != "" && s.Class == "ok" {
			s.Class = "bad"
		}
		if b.Refetch {
			s.Detail += "; a refetch: its export replaces the current one"
		}
		out = append(out, s)
	}
	switch b.State {
	case "exported", "purged":
		if b.FinishedAt != nil || b.ExportPath != "" {
			s := step{At: b.FinishedAt, What: fmt.Sprintf("Exported (version %d)", b.ExportVersion), Class: "ok", Detail: b.ExportPath}
			if b.ExportRemoved {
				s.Detail = "the export was removed once every sink had it"
			}
			out = append(out, s)
		}
	case "abandoned":
		out = append(out, step{At: b.FinishedAt, What: "Abandoned", Class: "bad", Kind: b.ErrorKind, Error: b.LastError,
			Detail: "no more attempts; a refetch tries again while the provider keeps the results"})
	}
	if b.Tombstone != nil {
		out = append(out, step{What: "Purged", Class: "ok", Detail: "its export and record are deleted; the tombstone keeps its dates and manifest digest"})
	}
	for _, d := range b.Deliveries {
		s := step{What: "Delivery to " + d.Sink + ": " + d.State, Kind: d.ErrorKind, Error: d.LastError,
			Detail: fmt.Sprintf("version %d; %d attempt(s), %d part(s) done; queued %s", d.Version, d.Attempts, d.PartsDone, d.QueuedAt.UTC().Format(time.RFC3339))}
		switch d.State {
		case "delivered":
			s.At, s.Class = d.DeliveredAt, "ok"
		case "failed":
			s.Class = "bad"
		default:
			s.Class, s.At = "busy", d.NextAttemptAt
			s.Detail += "; the time shown is its next attempt"
		}
		out = append(out, s)
	}
	return out
}

func num(p *int64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatInt(*p, 10)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// actions are the batch actions the console offers, with the question its
// confirmation asks and what the batch page says once it is done.
var actions = map[string]struct{ Ask, Done string }{
	"refetch":   {"Fetch this batch again from its first page? Its new export replaces the current one, and every sink gets the new version.", "Refetch queued: the batch is back in the queue."},
	"retry":     {"Try this batch's fetch now instead of waiting for its next attempt?", "The fetch is due now."},
	"redeliver": {"Deliver this batch's newest export to the sink again, from its first part?", "Redelivery queued."},
}

// doneMessage is what the page says after an action sent it back here.
func doneMessage(r *http.Request) string {
	a, ok := actions[r.URL.Query().Get("done")]
	if !ok {
		return ""
	}
	if sink := r.URL.Query().Get("sink"); sink != "" {
		return a.Done + " Sink: " + sink + "."
	}
	return a.Done
}

type confirmData struct {
	ID, Action, Sink, Ask string
}

// confirm is GET /ui/batches/{id}/confirm?action=…[&sink=…]: the question
// before an action, and its form.
func (c *Console) confirm(w http.ResponseWriter, r *http.Request, ss *session) {
	id, q := r.PathValue("id"), r.URL.Query()
	v := view{Title: "Confirm", Nav: "batches", CSRF: ss.csrf, SignedIn: true}
	a, ok := actions[q.Get("action")]
	if !ok || (q.Get("action") == "redeliver" && q.Get("sink") == "") {
		v.Problem = "There is no such batch action; the actions are refetch, retry and redeliver (with a sink)."
		c.render(w, http.StatusBadRequest, "problem", v)
		return
	}
	v.D = confirmData{ID: id, Action: q.Get("action"), Sink: q.Get("sink"), Ask: a.Ask}
	c.render(w, http.StatusOK, "confirm", v)
}

// batchAction is POST /ui/batches/{id}/{action}: the admin API's action
// of that name, then back to the batch's page.
func (c *Console) batchAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, action := r.PathValue("id"), r.PathValue("action")
	if _, ok := actions[action]; !ok {
		c.render(w, http.StatusNotFound, "problem", view{Title: "Not found", CSRF: ss.csrf, SignedIn: true,
			Problem: "There is no batch action by that name."})
		return
	}
	path := "/admin/batches/" + url.PathEscape(id) + "/" + action
	sink := r.PostFormValue("sink")
	if action == "redeliver" {
		path += "?" + url.Values{"sink": {sink}}.Encode()
	}
	if err := c.call(r.Context(), r, http.MethodPost, path, nil, nil); err != nil {
		status, p := problemOf(err)
		c.render(w, status, "problem", view{Title: "Not done", Nav: "batches", CSRF: ss.csrf, SignedIn: true,
			Problem: "The " + action + " of batch " + id + " was refused: " + p, D: nil})
		return
	}
	q := url.Values{"done": {action}}
	if sink != "" {
		q.Set("sink", sink)
	}
	http.Redirect(w, r, "/ui/batches/"+url.PathEscape(id)+"?"+q.Encode(), http.StatusSeeOther)
}
