package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/batchhook/batchhook/admin"
)

// notFound names what a 404 from the admin API was about ("no payment
// event 1"), in place of explain's generic "no such batch or entry"; other
// errors go through explain.
func notFound(err error, what string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return fmt.Errorf("%s (%w)", what, err)
	}
	return explain(err)
}

// resendNotFound says which of the two a resend's 404 lacked: the
// submission, or the chunk in it (with the indexes it has), by asking the
// admin API for the submission.
func resendNotFound(ctx context.Context, c *adminClient, err error, id, index string) error {
	raw, gerr := c.do(ctx, http.MethodGet, "/admin/submissions/"+url.PathEscape(id))
	var s admin.SubmissionView
	if gerr == nil && json.Unmarshal(raw, &s) == nil {
		what := fmt.Sprintf("submission %s has no chunk %s", id, index)
		if n := len(s.Chunks); n > 0 {
			what += fmt.Sprintf(" (its chunks are 0 to %d)", n-1)
		}
		return notFound(err, what)
	}
	return notFound(err, "no submission "+id)
}
