package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/batchhook/batchhook/admin"
)

// pageSize is how many entries a list page shows.
const pageSize = 50

type batchesData struct {
	State  string
	States []string
	Query  string
	Items  []admin.BatchView
	// Next is the cursor of the next page; empty on the last.
	Next string
}

// batches is GET /ui/batches: a page of batches, newest first, in one
// state or all (?state=), or the batch whose id starts with ?q=.
func (c *Console) batches(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Batches", Nav: "batches", CSRF: ss.csrf, SignedIn: true}
	q := r.URL.Query()
	d := batchesData{State: q.Get("state"), States: batchStates, Query: q.Get("q")}
	if d.State != "" && !slices.Contains(batchStates, d.State) {
		d.State, v.Problem = "", "There is no batch state by that name; showing every state."
	}
	if d.Query != "" {
		var b admin.BatchView
		err := c.get(r, "/admin/batches/"+url.PathEscape(d.Query), &b)
		if err == nil {
			http.Redirect(w, r, "/ui/batches/"+url.PathEscape(b.ID), http.StatusSeeOther)
			return
		}
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			v.Problem = "No batch id starts with “" + d.Query + "”."
		default:
			_, p := problemOf(err)
			v.Problem = "Finding “" + d.Query + "” failed: " + p
		}
	}
	path := "/admin/batches?" + url.Values{"state": {d.State}, "limit": {itoa(pageSize)}, "cursor": {q.Get("cursor")}}.Encode()
	var page admin.ListReply[admin.BatchView]
	if err := c.get(r, path, &page); err != nil {
		status, p := problemOf(err)
		v.Problem = "The batches could not be listed: " + p
		c.render(w, status, "problem", v)
		return
	}
	d.Items, d.Next = page.Items, page.NextCursor
	v.D = d
	c.render(w, http.StatusOK, "batches", v)
}
