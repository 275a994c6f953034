package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/daemon"
)

const batchesUsage = `Usage:
  batchhook batches list [--state S] [--limit N] [--cursor C] [--json] [--admin URL]
  batchhook batches show ID [--json] [--admin URL]
  batchhook batches refetch ID [--json] [--admin URL]
  batchhook batches retry ID [--json] [--admin URL]
  batchhook batches redeliver ID --sink NAME [--json] [--admin URL]

Talks to the running daemon's admin API. For show, ID may be the first
characters of a batch id, when no other batch starts so; refetch, retry
and redeliver take the whole id. retry makes a queued batch that waits out
a backoff after failed fetches due now (refetch fetches an exported,
abandoned or purged one again). Environment: BATCHHOOK_ADMIN_URL
(default http://127.0.0.1:9090), BATCHHOOK_ADMIN_TOKEN or
BATCHHOOK_ADMIN_TOKEN_FILE.
`

func batchesCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	sub, code, ok := subcommand(args, batchesUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("batches "+sub, batchesUsage, stderr)
	asJSON, client := adminFlags(fs)
	state := fs.String("state", "", "only batches in this state (submitted, tracked, queued, fetching, exported, abandoned, purged)")
	limit := fs.Int("limit", 50, "batches per page (1 to 1000)")
	cursor := fs.String("cursor", "", "next_cursor of a previous page")
	sinkChoices := strings.Join(daemon.DeliverySinkNames(), ", ")
	sinkName := fs.String("sink", "", "redeliver: the sink to deliver to again ("+sinkChoices+")")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook batches: %v\n", err)
		return 2
	}
	var raw []byte
	switch {
	case sub == "list" && len(pos) == 0:
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if *state != "" {
			q.Set("state", *state)
		}
		if *cursor != "" {
			q.Set("cursor", *cursor)
		}
		raw, err = c.do(ctx, http.MethodGet, "/admin/batches?"+q.Encode())
	case sub == "show" && len(pos) == 1:
		raw, err = c.do(ctx, http.MethodGet, "/admin/batches/"+url.PathEscape(pos[0]))
	case sub == "refetch" && len(pos) == 1:
		raw, err = c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(pos[0])+"/refetch")
	case sub == "retry" && len(pos) == 1:
		raw, err = c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(pos[0])+"/retry")
	case sub == "redeliver" && len(pos) == 1 && *sinkName != "":
		raw, err = c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(pos[0])+"/redeliver?"+url.Values{"sink": {*sinkName}}.Encode())
	case sub == "redeliver" && *sinkName == "":
		fmt.Fprintf(stderr, "batchhook batches redeliver: --sink is required: the sink to deliver to again, one of %s "+
			"that the daemon's BATCHHOOK_SINKS names (batchhook batches show ID lists the batch's deliveries)\n%s", sinkChoices, batchesUsage)
		return 2
	default:
		fmt.Fprintf(stderr, "batchhook batches: bad arguments\n%s", batchesUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "batchhook batches %s: %v\n", sub, explain(err))
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(stdout, raw), stderr)
	}
	if sub == "list" {
		var page admin.ListReply[admin.BatchView]
		if err := json.Unmarshal(raw, &page); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "BATCH\tSTATE\tSTATUS\tPAGES\tITEMS\tRECEIVED\tLAST ERROR")
		for _, b := range page.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", b.ID, b.State, b.Status, b.Pages, b.Items,
				timeOrDash(b.ReceivedAt), oneLine(b.LastError, 60))
		}
		tw.Flush()
		if page.NextCursor != "" {
			fmt.Fprintf(stdout, "more: --cursor %s\n", page.NextCursor)
		}
		return 0
	}
	if sub == "redeliver" {
		var d admin.DeliveryView
		if err := json.Unmarshal(raw, &d); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		fmt.Fprintf(stdout, "batch %s queued for delivery to %s (version %d)\n", d.BatchID, d.Sink, d.Version)
		return 0
	}
	var b admin.BatchView
	if err := json.Unmarshal(raw, &b); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	if sub == "refetch" {
		fmt.Fprintf(stdout, "batch %s queued for refetch; its export will be replaced\n", b.ID)
		return 0
	}
	if sub == "retry" {
		fmt.Fprintf(stdout, "batch %s due for a fetch now (%s so far)\n", b.ID, plural(b.FetchAttempts, "failed attempt", "failed attempts"))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	rows := [][2]string{
		{"batch", b.ID}, {"state", b.State}, {"status", b.Status}, {"source", b.Source},
	}
	// A submitted or tracked batch has received nothing yet: no
	// received row, its submitted (or tracked) time below instead.
	if !b.ReceivedAt.IsZero() {
		rows = append(rows, [2]string{"received", b.ReceivedAt.UTC().Format(time.RFC3339)}, [2]string{"delivery attempt", fmt.Sprint(b.Attempt)})
	}
	rows = append(rows, [2]string{"pages", fmt.Sprint(b.Pages)}, [2]string{"items", fmt.Sprint(b.Items)})
	rows = append(rows, fetchRows(b)...)
	if b.NextAttemptAt != nil {
		rows = append(rows, [2]string{"next attempt", b.NextAttemptAt.UTC().Format(time.RFC3339)})
	}
	if b.SubmittedAt != nil {
		label := "submitted"
		if b.SubmissionID == "" {
			label = "tracked" // SubmittedAt is when an operator began tracking it
		}
		rows = append(rows, [2]string{label, b.SubmittedAt.UTC().Format(time.RFC3339)})
	}
	if b.SubmissionID != "" {
		rows = append(rows, [2]string{"submission", fmt.Sprintf("%s (%s)", b.SubmissionID, plural(b.CPFCount, "CPF", "CPFs"))})
	}
	if b.PollAttempts > 0 || b.NextPollAt != nil {
		next := ""
		if b.NextPollAt != nil {
			next = ", next " + b.NextPollAt.UTC().Format(time.RFC3339)
		}
		rows = append(rows, [2]string{"polls", fmt.Sprintf("%d%s", b.PollAttempts, next)})
	}
	for _, r := range [][2]string{{"last error", b.LastError}, {"error kind", b.ErrorKind}, {"export", b.ExportPath}, {"flags", strings.Join(b.Flags, "; ")}} {
		if r[1] != "" {
			rows = append(rows, r)
		}
	}
	if b.ExportRemoved {
		rows = append(rows, [2]string{"export removed", "yes (every sink had it; refetch before a redeliver)"})
	}
	if t := b.Tombstone; t != nil {
		rows = append(rows, [2]string{"purged", t.PurgedAt.UTC().Format(time.RFC3339)})
		if !t.ExportPurgedAt.IsZero() {
			rows = append(rows, [2]string{"export purged", fmt.Sprintf("%s (%d items, sha256 %s)",
				t.ExportPurgedAt.UTC().Format(time.RFC3339), t.ManifestItems, t.ManifestSHA256)})
		}
		if !t.RecordPurgedAt.IsZero() {
			rows = append(rows, [2]string{"record reduced", t.RecordPurgedAt.UTC().Format(time.RFC3339)})
		}
		if len(t.NeverDelivered) > 0 {
			rows = append(rows, [2]string{"never delivered to", strings.Join(t.NeverDelivered, ", ")})
		}
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	tw.Flush()
	if len(b.Deliveries) > 0 {
		fmt.Fprintln(stdout)
		printDeliveries(stdout, b.Deliveries, false)
	}
	return 0
}
