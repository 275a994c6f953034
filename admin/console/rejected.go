package console

import (
	"net/http"
	"net/url"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/signature"
)

// Rejected deliveries are those the webhooks refused with 401: a missing
// or wrong signature. The console shows why, in `batchhook verify`'s
// words, and the signature header as sent; the kept body stays with the
// CLI (`batchhook rejected show`, `batchhook verify --rejected`).

type rejectedRow struct {
	admin.RejectedView
	// Explain is the reason in verify's words.
	Explain string
}

type rejectedListData struct {
	Items []rejectedRow
	// Off: the daemon keeps no rejected deliveries.
	Off bool
}

func rejectedRowOf(e admin.RejectedView) rejectedRow {
	e.Body = nil // never rendered; dropped so no template can
	return rejectedRow{RejectedView: e, Explain: signature.Reason(e.Reason).Explain()}
}

// rejectedList is GET /ui/rejected: the last deliveries refused with 401,
// newest first.
func (c *Console) rejectedList(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Rejected (401)", Nav: "rejected", CSRF: ss.csrf, SignedIn: true}
	var page admin.ListReply[admin.RejectedView]
	var d rejectedListData
	if err := c.get(r, "/admin/rejected", &page); err != nil {
		status, p := problemOf(err)
		if status != http.StatusNotFound {
			v.Problem = "The rejected deliveries could not be listed: " + p
			c.render(w, status, "problem", v)
			return
		}
		d.Off = true
	}
	for _, e := range page.Items {
		d.Items = append(d.Items, rejectedRowOf(e))
	}
	v.D = d
	c.render(w, http.StatusOK, "rejected", v)
}

// rejectedEntry is GET /ui/rejected/{id}: one refused delivery, why, and
// how to check the secret against it.
func (c *Console) rejectedEntry(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	v := view{Title: "Rejected delivery " + id, Nav: "rejected", CSRF: ss.csrf, SignedIn: true}
	var e admin.RejectedView
	if err := c.get(r, "/admin/rejected/"+url.PathEscape(id), &e); err != nil {
		status, p := problemOf(err)
		if status == http.StatusNotFound {
			p = "No kept rejected delivery has the id “" + id + "” (only the last BATCHHOOK_REJECTED_KEEP are kept)."
		}
		v.Problem = p
		c.render(w, status, "problem", v)
		return
	}
	v.D = rejectedRowOf(e)
	c.render(w, http.StatusOK, "rejected_entry", v)
}
