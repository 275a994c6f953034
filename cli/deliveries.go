package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
)

// printDeliveries writes a table of deliveries; withBatch adds the batch
// column (a list across batches).
func printDeliveries(w io.Writer, ds []admin.DeliveryView, withBatch bool) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	head := "SINK\tSTATE\tVERSION\tATTEMPTS\tPARTS\tWHEN\tLAST ERROR"
	if withBatch {
		head = "BATCH\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, d := range ds {
		when := ""
		switch {
		case d.DeliveredAt != nil && d.State == "delivered":
			when = "delivered " + d.DeliveredAt.UTC().Format(time.RFC3339)
		case d.NextAttemptAt != nil:
			when = "next " + d.NextAttemptAt.UTC().Format(time.RFC3339)
		}
		if withBatch {
			fmt.Fprintf(tw, "%s\t", d.BatchID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", d.Sink, d.State, d.Version, d.Attempts, d.PartsDone, when, oneLine(d.LastError, 60))
	}
	tw.Flush()
}

const deliveriesUsage = `Usage:
  batchhook deliveries list [--state failed|pending|delivered] [--sink NAME] [--limit N] [--cursor C] [--json] [--admin URL]

Deliveries of exports to the sinks (BATCHHOOK_SINKS), by state (default
failed: the ones only an operator's "batchhook batches redeliver" sends
again). Same environment as "batchhook batches".
`

func deliveriesCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	sub, code, ok := subcommand(args, deliveriesUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("deliveries "+sub, deliveriesUsage, stderr)
	asJSON, client := adminFlags(fs)
	state := fs.String("state", "failed", "failed, pending or delivered")
	sinkName := fs.String("sink", "", "only deliveries to this sink")
	limit := fs.Int("limit", 50, "deliveries per page (1 to 1000)")
	cursor := fs.String("cursor", "", "next_cursor of a previous page")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	if sub != "list" || len(pos) != 0 {
		fmt.Fprintf(stderr, "batchhook deliveries: bad arguments\n%s", deliveriesUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook deliveries: %v\n", err)
		return 2
	}
	q := url.Values{"state": {*state}, "limit": {fmt.Sprint(*limit)}}
	if *sinkName != "" {
		q.Set("sink", *sinkName)
	}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	raw, err := c.do(ctx, http.MethodGet, "/admin/deliveries?"+q.Encode())
	if err != nil {
		fmt.Fprintf(stderr, "batchhook deliveries list: %v\n", explain(err))
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(stdout, raw), stderr)
	}
	var page admin.ListReply[admin.DeliveryView]
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	printDeliveries(stdout, page.Items, true)
	if page.NextCursor != "" {
		fmt.Fprintf(stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return 0
}
