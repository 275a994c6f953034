package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/batchhook/batchhook/admin"
)

// The payment event log, metadata only: the API never serves a payment
// body (names, CPFs, e-mails), so the console cannot show one.

type paymentsData struct {
	Enabled bool
	// Absent: the daemon serves no payment log at all.
	Absent bool
	Since  uint64
	Items  []admin.PaymentEventView
	// Next is the since of the next page; 0 on the last.
	Next uint64
	// Sinks are the payment sinks' backlogs (GET /admin/status); none
	// while payments are off.
	Sinks []admin.PaymentSinkStatusView
}

// payments is GET /ui/payments?since=SEQ: the log's events after SEQ, in
// order, and each payment sink's backlog.
func (c *Console) payments(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Payments", Nav: "payments", CSRF: ss.csrf, SignedIn: true}
	var d paymentsData
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			v.Problem = "since must be a sequence number; showing the log from its first event."
		}
		d.Since = n
	}
	var page admin.PaymentPage
	path := "/admin/payments/events?" + url.Values{"since": {strconv.FormatUint(d.Since, 10)}, "limit": {itoa(pageSize)}}.Encode()
	if err := c.get(r, path, &page); err != nil {
		status, p := problemOf(err)
		if status != http.StatusNotFound {
			v.Problem = "The payment event log could not be read: " + p
			c.render(w, status, "problem", v)
			return
		}
		d.Absent = true
	}
	d.Enabled, d.Items, d.Next = page.Enabled, page.Items, page.NextSince
	var s admin.StatusView
	if err := c.get(r, "/admin/status", &s); err == nil {
		d.Sinks = s.PaymentSinks
	}
	v.D = d
	c.render(w, http.StatusOK, "payments", v)
}
