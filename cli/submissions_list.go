package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/batchhook/batchhook/admin"
)

// submissionsList is "batchhook submissions list": the submissions, newest
// first, so that an id printed on a terminal long closed can be found
// again, with each one's progress and what holds it back.
func submissionsList(ctx context.Context, args []string, e Env) int {
	fs := newFlags("submissions list", submissionsUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	limit := fs.Int("limit", 50, "submissions per page (1 to 1000)")
	cursor := fs.String("cursor", "", "next_cursor of a previous page")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 0 {
		fmt.Fprintf(e.Stderr, "batchhook submissions list: takes no arguments\n%s", submissionsUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submissions: %v\n", err)
		return 2
	}
	q := url.Values{"limit": {fmt.Sprint(*limit)}}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	raw, err := c.do(ctx, http.MethodGet, "/admin/submissions?"+q.Encode())
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submissions list: %v\n", err)
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(e.Stdout, raw), e.Stderr)
	}
	var page admin.ListReply[admin.SubmissionSummaryView]
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), e.Stderr)
	}
	printSubmissions(e.Stdout, page.Items)
	if page.NextCursor != "" {
		fmt.Fprintf(e.Stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return 0
}

// printSubmissions prints a table of submissions; the last column says
// what an operator needs: the state, or why the chunks wait.
func printSubmissions(w io.Writer, subs []admin.SubmissionSummaryView) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBMISSION\tCREATED\tSUBMITTED\tCPFS\tSTATE")
	for _, s := range subs {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\n", s.ID, timeOrDash(s.CreatedAt), s.Submitted, s.Chunks, s.Valid, submissionState(s))
	}
	tw.Flush()
}

// submissionState is the state, and for a waiting submission why it
// waits (with what to do, when the provider refused the last attempt);
// for an incomplete one, how many chunks ended in which state.
func submissionState(s admin.SubmissionSummaryView) string {
	switch s.State {
	case admin.SubmissionWaiting:
		w := s.Waiting
		switch {
		case w == nil:
			return "waiting"
		case w.Hint != "":
			return "waiting: " + w.Hint
		case w.Reason == "rate_limit":
			return "waiting: the provider's rate limit"
		case w.Reason == "in_flight_cap":
			return fmt.Sprintf("waiting: %d of %d batches in flight", w.InFlight, w.MaxInFlight)
		case w.Reason != "":
			return "waiting: " + w.Reason
		}
		return "waiting: on its way"
	case admin.SubmissionIncomplete:
		var parts []string
		for _, st := range []string{"failed", "submit_unknown"} {
			if n := s.ChunkState[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		return "incomplete: " + strings.Join(parts, ", ")
	}
	return s.State
}
