package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

func exportFor(t *testing.T, st *store.Store, id string, at time.Time) {
	t.Helper()
	if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: id, Status: "completed", ReceivedAt: at, Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if b, _, err := st.Lease(at); err != nil || b == nil || b.ID != id {
		t.Fatalf("lease %s: %v %v", id, b, err)
	}
	if err := st.Finish(id, store.StateExported, "/x/"+id, "", 0, at); err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, method, url string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s %s: decode: %v", method, url, err)
	}
	return resp.StatusCode
}

func TestDeliveryRoutes(t *testing.T) {
	srv, st := newTestServer(t, "")
	st.SetSinks([]string{"http", "exec"})
	now := time.Now().UTC()
	exportFor(t, st, "b1", now)
	exportFor(t, st, "b2", now)

	var show BatchView
	if code := getJSON(t, "GET", srv.URL+"/admin/batches/b1", &show); code != 200 || len(show.Deliveries) != 2 {
		t.Fatalf("show = %d %+v; want both deliveries", code, show)
	}
	for _, d := range show.Deliveries {
		if d.State != "pending" || d.NextAttemptAt == nil || d.BatchID != "b1" {
			t.Fatalf("delivery view = %+v", d)
		}
	}

	d, _, _ := st.NextDelivery("exec", now, func(id string) bool { return id != "b2" })
	if err := st.FailDelivery("b2", "exec", d.Generation, "exit", "exit status 1"); err != nil {
		t.Fatal(err)
	}
	var page ListReply[DeliveryView]
	if code := getJSON(t, "GET", srv.URL+"/admin/deliveries?state=failed", &page); code != 200 || len(page.Items) != 1 ||
		page.Items[0].BatchID != "b2" || page.Items[0].Sink != "exec" || page.Items[0].LastError != "exit status 1" {
		t.Fatalf("failed list = %d %+v", code, page)
	}
	page = ListReply[DeliveryView]{}
	if code := getJSON(t, "GET", srv.URL+"/admin/deliveries?state=pending&sink=http&limit=1", &page); code != 200 || len(page.Items) != 1 || page.NextCursor == "" {
		t.Fatalf("pending http page 1 = %d %+v", code, page)
	}
	first, cursor := page.Items[0].BatchID, page.NextCursor
	page = ListReply[DeliveryView]{}
	getJSON(t, "GET", srv.URL+"/admin/deliveries?state=pending&sink=http&limit=1&cursor="+cursor, &page)
	if len(page.Items) != 1 || page.Items[0].BatchID == first || page.Items[0].Sink != "http" || page.NextCursor != "" {
		t.Fatalf("pending http page 2 = %+v (page 1 had %s)", page, first)
	}

	var view DeliveryView
	if code := getJSON(t, "POST", srv.URL+"/admin/batches/b2/redeliver?sink=exec", &view); code != 202 || view.State != "pending" || view.Sink != "exec" {
		t.Fatalf("redeliver = %d %+v", code, view)
	}
	if ds, _ := st.Deliveries("b2"); ds[0].Sink != "exec" || ds[0].State != store.DeliveryPending {
		t.Fatalf("redeliver did not queue: %+v", ds)
	}
	if _, err := st.Record(store.Notification{Event: "batch.completed", BatchID: "q1", Status: "completed", ReceivedAt: now, Raw: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	// b1 delivered to both sinks with the export dropped: redeliver needs a refetch.
	for _, name := range []string{"http", "exec"} {
		d := deliveryNamed(t, st, "b1", name)
		if _, err := st.Delivered("b1", name, d.Generation, now, true); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		path string
		code int
		text string
	}{
		{"/admin/batches/nope/redeliver?sink=http", 404, "not_found"},
		{"/admin/batches/q1/redeliver?sink=http", 409, "queued"},
		{"/admin/batches/b2/redeliver?sink=kafka", 409, "not configured"},
		{"/admin/batches/b1/redeliver?sink=http", 409, "export removed; refetch it first"},
		{"/admin/batches/b2/redeliver", 400, "sink is required"},
	}
	for _, c := range cases {
		code, body := call(t, "POST", srv.URL+c.path)
		if code != c.code || !strings.Contains(body["error"].(string), c.text) {
			t.Errorf("POST %s = %d %v, want %d with %q", c.path, code, body, c.code, c.text)
		}
		if reason, _ := body["error"].(string); code == 409 && hasStateTail(reason) {
			t.Errorf("POST %s: reply %q ends with the store's generic state-conflict text", c.path, reason)
		}
	}
	for _, path := range []string{"/admin/deliveries", "/admin/deliveries?state=lost", "/admin/deliveries?state=failed&cursor=zz"} {
		if code, _ := call(t, "GET", srv.URL+path); code != 400 {
			t.Errorf("GET %s = %d, want 400", path, code)
		}
	}
}

func deliveryNamed(t *testing.T, st *store.Store, id, name string) store.Delivery {
	t.Helper()
	ds, err := st.Deliveries(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Sink == name {
			return d
		}
	}
	t.Fatalf("no delivery of %s to %s", id, name)
	return store.Delivery{}
}
