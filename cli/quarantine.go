package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
)

const quarantineUsage = `Usage:
  batchhook quarantine list [--limit N] [--cursor C] [--json] [--admin URL]
  batchhook quarantine show ID [--json] [--admin URL]

Signed deliveries that failed validation (400), with the reason. ID may be
the first few digits of an entry's id, when no other entry starts so. Same
environment as "batchhook batches".
`

func quarantineCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	sub, code, ok := subcommand(args, quarantineUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("quarantine "+sub, quarantineUsage, stderr)
	asJSON, client := adminFlags(fs)
	limit := fs.Int("limit", 50, "entries per page (1 to 1000)")
	cursor := fs.String("cursor", "", "next_cursor of a previous page")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook quarantine: %v\n", err)
		return 2
	}
	var raw []byte
	switch {
	case sub == "list" && len(pos) == 0:
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if *cursor != "" {
			q.Set("cursor", *cursor)
		}
		raw, err = c.do(ctx, http.MethodGet, "/admin/quarantine?"+q.Encode())
	case sub == "show" && len(pos) == 1:
		raw, err = c.do(ctx, http.MethodGet, "/admin/quarantine/"+url.PathEscape(pos[0]))
	default:
		fmt.Fprintf(stderr, "batchhook quarantine: bad arguments\n%s", quarantineUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "batchhook quarantine %s: %v\n", sub, explain(err))
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(stdout, raw), stderr)
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	if sub == "show" {
		var e admin.QuarantineView
		if err := json.Unmarshal(raw, &e); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		body := e.Body
		if e.Product == "payments" {
			body = "(not shown: a payments body may hold personal data)"
		}
		fmt.Fprintf(tw, "id:\t%s\nproduct:\t%s\nreason:\t%s\nreceived:\t%s\ndelivery attempt:\t%d\n", e.ID, e.Product,
			e.Reason, e.ReceivedAt.UTC().Format(time.RFC3339), e.Attempt)
		if e.Product != "payments" {
			fmt.Fprintf(tw, "batch id:\t%s\n", orDash(e.BatchID))
		}
		if e.Masked && e.Product != "payments" {
			body += "\n\t(CPF-shaped digits masked with *; the body that came had " + fmt.Sprint(e.BodyLen) + " bytes)"
		}
		fmt.Fprintf(tw, "body:\t%s\n", body)
		tw.Flush()
		fmt.Fprintf(stdout, "\nnext step: %s\n", admin.QuarantineNextStep(e.Product, e.BatchID))
		return 0
	}
	var page admin.ListReply[admin.QuarantineView]
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	fmt.Fprintln(tw, "ID\tPRODUCT\tBATCH\tRECEIVED\tREASON")
	for _, e := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Product, orDash(e.BatchID), e.ReceivedAt.UTC().Format(time.RFC3339), oneLine(e.Reason, 80))
	}
	tw.Flush()
	if page.NextCursor != "" {
		fmt.Fprintf(stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return 0
}
