package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
)

const paymentsUsage = `Usage:
  batchhook payments list [--since SEQ] [--limit N] [--json] [--admin URL]
  batchhook payments show SEQ [--json] [--admin URL]

The payment event log (docs/payments.md): every payments webhook logged,
in order, with its dedup key and where it stands with each payment sink.
Bodies are never shown (they hold personal data). list starts after
--since (0: from the first event). Same environment as "batchhook batches".
`

func paymentsCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	sub, code, ok := subcommand(args, paymentsUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("payments "+sub, paymentsUsage, stderr)
	asJSON, client := adminFlags(fs)
	since := fs.Uint64("since", 0, "list: events after this sequence number")
	limit := fs.Int("limit", 100, "list: events per page (1 to 1000)")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	var path string
	switch {
	case sub == "list" && len(pos) == 0:
		path = "/admin/payments/events?" + url.Values{"since": {strconv.FormatUint(*since, 10)}, "limit": {strconv.Itoa(*limit)}}.Encode()
	case sub == "show" && len(pos) == 1:
		if _, err := strconv.ParseUint(pos[0], 10, 64); err != nil {
			fmt.Fprintf(stderr, "batchhook payments show: %q is not a sequence number\n", pos[0])
			return 2
		}
		path = "/admin/payments/events/" + pos[0]
	default:
		fmt.Fprintf(stderr, "batchhook payments: bad arguments\n%s", paymentsUsage)
		return 2
	}
	notFoundMsg := ""
	if sub == "show" {
		notFoundMsg = "no payment event " + pos[0]
	}
	raw, code, done := getReply(ctx, "payments "+sub, client, path, notFoundMsg, *asJSON, stdout, stderr)
	if done {
		return code
	}
	if sub == "show" {
		var p admin.PaymentEventView
		if err := json.Unmarshal(raw, &p); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		printPayment(stdout, p)
		return 0
	}
	var page struct {
		Items     []admin.PaymentEventView `json:"items"`
		NextSince uint64                   `json:"next_since"`
		Enabled   bool                     `json:"payments_enabled"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	if !page.Enabled {
		fmt.Fprintln(stdout, "payments are off (no BATCHHOOK_PAYMENTS_SIGNING_SECRET); events logged before:")
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tRECEIVED\tEVENT\tATTEMPT\tBODY\tDEDUP KEY")
	for _, p := range page.Items {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", p.Seq, p.ReceivedAt.UTC().Format(time.RFC3339), oneLine(p.Event, 40),
			p.Attempt, bodyState(p), oneLine(p.DedupKey, 60))
	}
	tw.Flush()
	if page.NextSince != 0 {
		fmt.Fprintf(stdout, "more: --since %d\n", page.NextSince)
	}
	return 0
}

// bodyState says whether the event still holds its body.
func bodyState(p admin.PaymentEventView) string {
	switch {
	case p.ErasedBy != "":
		return "erased"
	case p.BodyDroppedAt != nil:
		return "purged"
	}
	return fmt.Sprintf("%d bytes", p.BodyLen)
}

func printPayment(w io.Writer, p admin.PaymentEventView) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "seq:\t%d\nreceived:\t%s\nevent:\t%s\ndelivery attempt:\t%d\ndedup key:\t%s\nbody sha256:\t%s\nbody:\t%s\n",
		p.Seq, p.ReceivedAt.UTC().Format(time.RFC3339), p.Event, p.Attempt, p.DedupKey, p.BodySHA256, bodyState(p))
	if p.BodyDroppedAt != nil {
		fmt.Fprintf(tw, "body dropped:\t%s\n", p.BodyDroppedAt.UTC().Format(time.RFC3339))
	}
	if p.ErasedBy != "" {
		fmt.Fprintf(tw, "erased by:\t%s\n", p.ErasedBy)
	}
	tw.Flush()
	if len(p.Deliveries) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SINK\tSTATE\tATTEMPTS\tLAST ERROR")
	for _, d := range p.Deliveries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Sink, d.State, paymentAttempts(d), oneLine(d.LastError, 60))
	}
	tw.Flush()
}

// paymentAttempts is the ATTEMPTS cell of one sink's delivery of an event.
// A sink's place in the payment log is a cursor: attempts are counted
// only for the event at its head (pending) and kept for one it refused
// (failed); once an event is delivered the count is reset for the next
// one, so none is known, and "0" would say it was never tried.
func paymentAttempts(d store.PaymentDelivery) string {
	if d.State == store.DeliveryDelivered {
		return "-"
	}
	return strconv.Itoa(d.Attempts)
}
