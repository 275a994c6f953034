package console

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// stateBox is one batch state in the overview's picture.
type stateBox struct {
	State string
	Count int
	// Oldest is the age in seconds of the state's oldest batch, for the
	// states a batch passes through (nil for the final ones, or none).
	Oldest *int64
	// Final: exported, abandoned, purged.
	Final bool
}

type overviewData struct {
	S      admin.StatusView
	States []stateBox
	Charts []chart
	// Attention lists what needs an operator, each with where to act;
	// the pipeline is healthy when it is empty and the daemon is ready.
	Attention []attention
	// SinkErrors is, per sink with a backlog, the error of one of its
	// pending (else failed) deliveries: why it does not move.
	SinkErrors map[string]admin.DeliveryView
}

// attention is one thing the overview asks an operator to look at.
type attention struct {
	What, Link, LinkText string
}

// batchStates are the batch states in pipeline order.
var batchStates = []string{"submitted", "tracked", "queued", "fetching", "exported", "abandoned", "purged"}

func isFinal(state string) bool {
	return state == "exported" || state == "abandoned" || state == "purged"
}

// overview is GET /ui/: GET /admin/status drawn as the pipeline.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Overview", Nav: "overview", CSRF: ss.csrf, SignedIn: true}
	var s admin.StatusView
	if err := c.get(r, "/admin/status", &s); err != nil {
		status, p := problemOf(err)
		v.Problem = "The daemon's status could not be read: " + p
		c.render(w, status, "problem", v)
		return
	}
	var live *Totals
	if c.o.Totals != nil {
		t := c.o.Totals()
		live = &t
	}
	d := overviewData{S: s, Charts: c.rates.charts(c.o.Now(), live)}
	for _, st := range batchStates {
		b := stateBox{State: st, Count: s.Queue.Batches[st], Final: isFinal(st)}
		if age, ok := s.Queue.OldestAgeByState[st]; ok && !b.Final {
			b.Oldest = &age
		}
		d.States = append(d.States, b)
	}
	d.SinkErrors = c.sinkErrors(r, s)
	d.Attention = attentionOf(s, d.SinkErrors)
	v.D = d
	c.render(w, http.StatusOK, "overview", v)
}

// sinkErrors reads, for each sink with pending or failed deliveries, one
// such delivery that has an error: the reason its backlog stands.
func (c *Console) sinkErrors(r *http.Request, s admin.StatusView) map[string]admin.DeliveryView {
	out := map[string]admin.DeliveryView{}
	for _, sk := range s.Sinks {
		for _, state := range []string{"pending", "failed"} {
			if (state == "pending" && sk.Pending == 0) || (state == "failed" && sk.Failed == 0) {
				continue
			}
			var page admin.ListReply[admin.DeliveryView]
			path := "/admin/deliveries?" + url.Values{"state": {state}, "sink": {sk.Name}, "limit": {"1"}}.Encode()
			if err := c.get(r, path, &page); err == nil && len(page.Items) > 0 && page.Items[0].LastError != "" {
				out[sk.Name] = page.Items[0]
				break
			}
		}
	}
	return out
}

// attentionOf lists what the status says needs an operator, beyond its
// warnings (which the page shows as they are): deliveries failed for
// good or retrying, abandoned batches, chunks that need a decision.
func attentionOf(s admin.StatusView, errs map[string]admin.DeliveryView) []attention {
	var out []attention
	// A sink's failed deliveries are among the status's warnings already
	// (with the CLI's command); the sinks table links them.
	for _, sk := range s.Sinks {
		if e, ok := errs[sk.Name]; ok && sk.Pending > 0 && e.State == "pending" {
			out = append(out, attention{What: fmt.Sprintf("%s to %s waiting to retry, the oldest for %s: %s.",
				plural(sk.Pending, "delivery is", "deliveries are"), sk.Name, ageText(sk.OldestAgeSeconds), e.LastError),
				Link: "/ui/deliveries?" + url.Values{"state": {"pending"}, "sink": {sk.Name}}.Encode(), LinkText: "See them"})
		}
	}
	if n := s.Queue.Batches["abandoned"]; n > 0 {
		out = append(out, attention{What: plural(n, "batch was", "batches were") + " abandoned (the fetch gave up).",
			Link: "/ui/batches?state=abandoned", LinkText: "See why; refetch while the provider keeps them"})
	}
	for _, st := range []string{"failed", "submit_unknown"} {
		if n := s.Chunks[st]; n > 0 {
			out = append(out, attention{What: fmt.Sprintf("%s %s.", plural(n, "submission chunk is", "submission chunks are"), st),
				Link: "/ui/submissions", LinkText: "See the submissions"})
		}
	}
	return out
}

func ageText(s *int64) string {
	if s == nil {
		return "a moment"
	}
	return human(time.Duration(*s) * time.Second)
}

// plural writes n with the singular or the plural words after it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
