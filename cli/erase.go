package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
)

const eraseUsage = `Usage:
  batchhook erase --cpf 123.456.789-09 [--json] [--admin URL]
  batchhook erase --cpf - [--json] [--admin URL]     (the CPF on standard input)
  batchhook erasures list [--json] [--admin URL]

erase removes one person's data (LGPD art. 18): every export item whose
BATCHHOOK_ITEM_CPF_FIELD holds the CPF, the CPF in chunks not yet accepted,
quarantined or audit bodies holding it. It prints what it touched and the
sinks that had already received the data (erase there too: batchhook does
not reach into them). The record keeps a keyed hash, never the CPF. With
"--cpf -" the CPF stays out of the process list and the shell history.

Talks to the running daemon's admin API. Environment: BATCHHOOK_ADMIN_URL
(default http://127.0.0.1:9090), BATCHHOOK_ADMIN_TOKEN or
BATCHHOOK_ADMIN_TOKEN_FILE.
`

func eraseCmd(ctx context.Context, args []string, e Env) int {
	fs := newFlags("erase", eraseUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	value := fs.String("cpf", "", `the CPF to erase, either form; "-" reads it from standard input`)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 0 || *value == "" {
		fmt.Fprintf(e.Stderr, "batchhook erase: --cpf is required\n%s", eraseUsage)
		return 2
	}
	if *value == "-" {
		line, err := bufio.NewReader(io.LimitReader(e.Stdin, 256)).ReadString('\n')
		if err != nil && err != io.EOF {
			fmt.Fprintf(e.Stderr, "batchhook erase: read the CPF from standard input: %v\n", err)
			return 2
		}
		*value = strings.TrimSpace(line)
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook erase: %v\n", err)
		return 2
	}
	body, _ := json.Marshal(map[string]string{"cpf": *value})
	raw, err := c.send(ctx, http.MethodPost, "/admin/erasures", "application/json", strings.NewReader(string(body)))
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook erase: %v\n", explain(err))
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(e.Stdout, raw), e.Stderr)
	}
	var r admin.ErasureView
	if err := json.Unmarshal(raw, &r); err != nil {
		return exitOf(fmt.Errorf("admin API returned invalid JSON: %w", err), e.Stderr)
	}
	return exitOf(printErasure(e.Stdout, r), e.Stderr)
}

// printErasure prints one erasure: a summary, then what it touched.
func printErasure(w io.Writer, r admin.ErasureView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "erasure\t%s (%s)\n", r.ID, r.State)
	if !r.Touched {
		fmt.Fprintf(tw, "touched\tnothing\n")
	}
	if r.Previous != "" {
		fmt.Fprintf(tw, "previous\t%s\n", r.Previous)
	}
	for _, b := range r.Batches {
		var sinks []string
		for _, s := range b.Sinks {
			sinks = append(sinks, fmt.Sprintf("%s (%s, version %d)", s.Sink, s.Received, s.Version))
		}
		line := fmt.Sprintf("batch\t%s: %s removed", b.BatchID, plural(int(b.Items), "item", "items"))
		if b.Version > 0 {
			line += fmt.Sprintf(", now version %d", b.Version)
		}
		if len(sinks) > 0 {
			line += "; already received by " + strings.Join(sinks, ", ") + ": erase there too"
		}
		fmt.Fprintln(tw, line)
	}
	for _, c := range r.Chunks {
		note := fmt.Sprintf("%s removed", plural(c.CPFs, "CPF", "CPFs"))
		switch {
		case c.InFlight:
			note = "being sent: the provider has it; erase again if it comes back to waiting"
		case c.Ended:
			note += ", chunk ended (nothing left to send)"
		}
		fmt.Fprintf(tw, "chunk\t%s/%d: %s\n", c.SubmissionID, c.Index, note)
	}
	for _, b := range r.Bodies {
		fmt.Fprintf(tw, "body\t%s %s: replaced by a tombstone\n", b.Kind, b.ID)
	}
	for _, p := range r.Payments {
		fmt.Fprintln(tw, paymentErasureLine(p.Seq, p.Sinks))
	}
	for _, id := range r.Unrewritten {
		fmt.Fprintf(tw, "NOT DONE\t%s: its export could not be rewritten and may still hold the CPF (log: erasure_export_failed); erase again once fixed\n", id)
	}
	return tw.Flush()
}

func erasuresCmd(ctx context.Context, args []string, e Env) int {
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(e.Stderr, eraseUsage)
		return 2
	}
	fs := newFlags("erasures list", eraseUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	if pos, err := parseArgs(fs, args[1:]); err != nil || len(pos) != 0 {
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook erasures: %v\n", err)
		return 2
	}
	raw, err := c.do(ctx, http.MethodGet, "/admin/erasures")
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook erasures list: %v\n", explain(err))
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(e.Stdout, raw), e.Stderr)
	}
	var page struct {
		Items []admin.ErasureView `json:"items"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("admin API returned invalid JSON: %w", err), e.Stderr)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tREQUESTED\tBATCHES\tITEMS\tCHUNKS\tBODIES\tSINKS\tPREVIOUS")
	for _, r := range page.Items {
		var items int64
		sinks := 0
		for _, b := range r.Batches {
			items += b.Items
			sinks += len(b.Sinks)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.ID, r.State, r.RequestedAt.Format(time.RFC3339),
			len(r.Batches), items, len(r.Chunks), len(r.Bodies), sinks, r.Previous)
	}
	return exitOf(tw.Flush(), e.Stderr)
}

// paymentErasureLine describes one erased payment event. The file payment
// sink's day files (EXPORT_DIR/payments) are rewritten by the erasure
// itself, so only the other sinks still hold the body and need erasing by
// hand.
func paymentErasureLine(seq uint64, sinks []string) string {
	line := fmt.Sprintf("payment\tevent %d: body dropped, its sha256 kept", seq)
	var others []string
	for _, s := range sinks {
		if s == "file" {
			line += "; its line removed from EXPORT_DIR/payments"
			continue
		}
		others = append(others, s)
	}
	if len(others) > 0 {
		line += "; already received by " + strings.Join(others, ", ") + ": erase there too"
	}
	return line
}
