package console

import (
	"net/http"

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
	d := overviewData{S: s, Charts: c.rates.charts()}
	for _, st := range batchStates {
		b := stateBox{State: st, Count: s.Queue.Batches[st], Final: isFinal(st)}
		d.States = append(d.States, b)
	}
	v.D = d
	c.render(w, http.StatusOK, "overview", v)
}
