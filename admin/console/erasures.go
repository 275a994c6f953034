package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/batchhook/batchhook/admin"
)

// Erasures remove one person's data everywhere batchhook keeps it (LGPD
// art. 18). The CPF typed into the form goes to the admin API in a POST
// body and nowhere else: no reply repeats it (not the page after, not an
// error), no log line or address holds it, and the form does not keep it
// for a retry.

// confirmValue is what the form's confirmation checkbox sends when ticked.
const confirmValue = "yes"

type erasuresData struct {
	Items []admin.ErasureView
	// Off: erasure is not configured on this daemon.
	Off bool
	// Done is the erasure just made, when the list has it.
	Done *admin.ErasureView
}

// erasures is GET /ui/erasures[?done=ID]: the form, and the erasures made,
// with what each removed and which sinks must erase too.
func (c *Console) erasures(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Erasures", Nav: "erasures", CSRF: ss.csrf, SignedIn: true}
	q := r.URL.Query()
	if q.Has("done") {
		v.Flash = "The erasure is recorded."
	}
	c.erasuresPage(w, r, http.StatusOK, v, q.Get("done"))
}

// erasuresPage renders the erasures page with v's flash or problem; done
// names the erasure just made.
func (c *Console) erasuresPage(w http.ResponseWriter, r *http.Request, status int, v view, done string) {
	var d erasuresData
	var page admin.ListReply[admin.ErasureView]
	if err := c.get(r, "/admin/erasures", &page); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
			st, p := problemOf(err)
			v.Problem = "The erasures could not be listed: " + p
			c.render(w, st, "problem", v)
			return
		}
		d.Off = true
	}
	d.Items = page.Items
	for i := range d.Items {
		if done != "" && d.Items[i].ID == done {
			d.Done = &d.Items[i]
		}
	}
	v.D = d
	c.render(w, status, "erasures", v)
}

// erase is POST /ui/erasures: with its confirmation ticked, POST
// /admin/erasures with the form's CPF, then back to the list (PRG). A
// refusal re-renders the page with an empty form and never the CPF.
func (c *Console) erase(w http.ResponseWriter, r *http.Request, ss *session) {
	v := view{Title: "Erasures", Nav: "erasures", CSRF: ss.csrf, SignedIn: true}
	cpf := r.PostFormValue("cpf")
	switch {
	case r.PostFormValue("confirm") != confirmValue:
		v.Problem = "Nothing was erased: tick the box to confirm that you understand what an erasure deletes."
		c.erasuresPage(w, r, http.StatusBadRequest, v, "")
		return
	case cpf == "":
		v.Problem = "Nothing was erased: type the CPF to erase."
		c.erasuresPage(w, r, http.StatusBadRequest, v, "")
		return
	}
	var e admin.ErasureView
	err := c.call(r.Context(), r, http.MethodPost, "/admin/erasures", map[string]string{"cpf": cpf}, &e)
	if err != nil {
		// The API's reason never holds the CPF either, but only these
		// fixed words are shown: nothing of the request comes back.
		status, problem := erasureProblem(err)
		v.Problem = problem
		c.erasuresPage(w, r, status, v, "")
		return
	}
	http.Redirect(w, r, "/ui/erasures?"+url.Values{"done": {e.ID}}.Encode(), http.StatusSeeOther)
}

// erasureProblem says why POST /admin/erasures did not succeed, in fixed
// words.
func erasureProblem(err error) (int, string) {
	var ae *apiError
	if !errors.As(err, &ae) {
		return http.StatusInternalServerError, "The erasure's reply could not be read: the list below shows whether it was recorded."
	}
	switch ae.Status {
	case http.StatusBadRequest:
		return http.StatusBadRequest, "Nothing was erased: that is not a valid CPF."
	case http.StatusServiceUnavailable:
		return http.StatusServiceUnavailable, "Nothing was erased: erasure is not configured on this daemon."
	}
	return http.StatusBadGateway, "The erasure did not finish (the admin API answered " + itoa(ae.Status) + "). " +
		"One that started stays pending and resumes at the next start or erasure; the log line erasure_failed says why."
}
