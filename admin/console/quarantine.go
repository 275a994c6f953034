package console

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/batchhook/batchhook/admin"
)

// The quarantine holds signed deliveries that failed validation (400).
// The console shows an entry's reason and where it came from, never its
// body: `batchhook quarantine show ID` prints that for whoever needs it.

type quarantineListData struct {
	Items []admin.QuarantineView
	Next  string
}

// quarantineList is GET /ui/quarantine: a page of quarantined deliveries.
func (c *Console) quarantineList(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Quarantine", Nav: "quarantine", CSRF: ss.csrf, SignedIn: true}
	path := "/admin/quarantine?" + url.Values{"limit": {itoa(pageSize)}, "cursor": {r.URL.Query().Get("cursor")}}.Encode()
	var page admin.ListReply[admin.QuarantineView]
	if err := c.get(r, path, &page); err != nil {
		status, p := problemOf(err)
		v.Problem = "The quarantine could not be listed: " + p
		c.render(w, status, "problem", v)
		return
	}
	v.D = quarantineListData{Items: page.Items, Next: page.NextCursor}
	c.render(w, http.StatusOK, "quarantine", v)
}

type quarantineEntryData struct {
	Q admin.QuarantineView
	// BodyLen is the kept body's length in bytes; HasBody says the API
	// served the body (a batch entry, not erased) intact, so it is known.
	BodyLen int
	HasBody bool
	// NextStep says what an operator does about the entry.
	NextStep string
}

// quarantineEntry is GET /ui/quarantine/{id}: one entry, without its body.
func (c *Console) quarantineEntry(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	v := view{Title: "Quarantined delivery", Nav: "quarantine", CSRF: ss.csrf, SignedIn: true}
	var q admin.QuarantineView
	if err := c.get(r, "/admin/quarantine/"+url.PathEscape(id), &q); err != nil {
		status, p := problemOf(err)
		if status == http.StatusNotFound {
			p = "No quarantined delivery has the id “" + id + "”."
		}
		v.Problem = p
		c.render(w, status, "problem", v)
		return
	}
	if q.ID != id { // a prefix: the page's address names the whole id
		http.Redirect(w, r, "/ui/quarantine/"+url.PathEscape(q.ID), http.StatusSeeOther)
		return
	}
	d := quarantineEntryData{Q: q, NextStep: admin.QuarantineNextStep(q.Product, q.BatchID)}
	// A body that was not UTF-8 reached us with U+FFFD in place of its
	// bad bytes: its length here would not be the body's.
	switch {
	case q.BodyLen > 0 && q.ErasedBy == "" && q.Product != "payments":
		d.BodyLen, d.HasBody = q.BodyLen, true // the length that came, before masking
	case q.Body != "" && !strings.ContainsRune(q.Body, utf8.RuneError):
		d.BodyLen, d.HasBody = len(q.Body), true
	}
	d.Q.Body = "" // never rendered; dropped so no template can
	v.D = d
	c.render(w, http.StatusOK, "quarantine_entry", v)
}
