package console

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/batchhook/batchhook/admin"
)

var deliveryStates = []string{"failed", "pending", "delivered"}

type deliveriesData struct {
	State, Sink string
	States      []string
	Sinks       []string
	Items       []admin.DeliveryView
	Next        string
}

// deliveries is GET /ui/deliveries?state=&sink=: one state's deliveries
// (failed first: what needs a hand), each with its redeliver.
func (c *Console) deliveries(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Deliveries", Nav: "deliveries", CSRF: ss.csrf, SignedIn: true}
	q := r.URL.Query()
	d := deliveriesData{State: q.Get("state"), Sink: q.Get("sink"), States: deliveryStates}
	if !slices.Contains(deliveryStates, d.State) {
		d.State = "failed"
	}
	var s admin.StatusView
	if err := c.get(r, "/admin/status", &s); err == nil {
		for _, sk := range s.Sinks {
			d.Sinks = append(d.Sinks, sk.Name)
		}
	}
	path := "/admin/deliveries?" + url.Values{"state": {d.State}, "sink": {d.Sink}, "limit": {itoa(pageSize)}, "cursor": {q.Get("cursor")}}.Encode()
	var page admin.ListReply[admin.DeliveryView]
	if err := c.get(r, path, &page); err != nil {
		status, p := problemOf(err)
		v.Problem = "The deliveries could not be listed: " + p
		c.render(w, status, "problem", v)
		return
	}
	d.Items, d.Next = page.Items, page.NextCursor
	v.D = d
	c.render(w, http.StatusOK, "deliveries", v)
}
