package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/logging"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

const submitUsage = `Usage:
  batchhook submit [--column NAME] [--strict] [--no-wait] [--json] [--admin URL] FILE|-
  batchhook submit --dry-run [--column NAME] [--strict] FILE|-

Sends a file of CPFs (one a line, or a CSV whose column NAME holds them) to
the running daemon, which validates the check digits, drops duplicates,
splits the rest into batches of at most 1,000 and submits them within the
provider's limits. Invalid lines are printed with their line numbers, masked.
Then it waits until every batch is submitted (progress on a terminal) and
prints the batch ids, one a line, or the submission as JSON.
Exit status: 0 when every chunk was submitted, 1 otherwise. It stops
waiting (exit 1) as soon as the provider refuses the API key, which no
retry can mend: it prints what to fix, and the daemon keeps the submission
and sends it once the key is fixed (batchhook submissions show ID).

--dry-run validates and splits the file here, exactly as the daemon would
(the same parser and the same split), and prints what would be submitted:
nothing is sent and no daemon is needed. Exit status 0 when something would
be submitted, 1 when nothing would (or, with --strict, any line is invalid).
`

// chunkNote is what an operator must know about a chunk beyond its
// state: that its CPFs are gone, so that a resend (which needs them) is
// refused; "" otherwise.
func chunkNote(ch admin.ChunkView) string {
	if ch.CPFsPurged {
		return "CPFs purged after BATCHHOOK_RECORD_RETENTION; cannot be resent: submit them again as a new submission"
	}
	return ""
}

// chunkHint says what to do about a chunk that ended without a batch:
// the provider refused it (failed) or may have accepted it (submit_unknown).
func chunkHint(ch admin.ChunkView) string {
	switch ch.State {
	case string(store.ChunkFailed):
		return submit.Hint(submit.OutcomeRejected)
	case string(store.ChunkUnknown):
		return submit.Hint(submit.OutcomeUnknown)
	}
	return ""
}

func submitCmd(ctx context.Context, args []string, e Env) int {
	fs := newFlags("submit", submitUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	column := fs.String("column", "", "the input is CSV with a header; NAME is the column holding the CPFs")
	strict := fs.Bool("strict", false, "submit nothing when any line is invalid")
	noWait := fs.Bool("no-wait", false, "print the submission id and return at once")
	every := fs.Duration("poll", time.Second, "how often to ask the daemon for progress")
	dryRun := fs.Bool("dry-run", false, "validate and split here; send nothing")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(e.Stderr, "batchhook submit: give one FILE, or - for standard input\n%s", submitUsage)
		return 2
	}
	if *dryRun {
		return submitDryRun(pos[0], *column, *strict, *asJSON, e)
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submit: %v\n", err)
		return 2
	}
	in := e.Stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			fmt.Fprintf(e.Stderr, "batchhook submit: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	q, ct := url.Values{}, "text/plain"
	if *column != "" {
		q.Set("column", *column)
		ct = "text/csv"
	}
	if *strict {
		q.Set("strict", "true")
	}
	raw, err := c.send(ctx, http.MethodPost, "/admin/submissions?"+q.Encode(), ct, in)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusUnprocessableEntity {
		raw = ae.body
	} else if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submit: %v\n", explain(err))
		return 1
	}
	var rc admin.ReceiptView
	if err := json.Unmarshal(raw, &rc); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), e.Stderr)
	}
	for _, inv := range rc.Invalid {
		fmt.Fprintf(e.Stderr, "line %d: %s: %s\n", inv.Line, inv.Masked, inv.Reason)
	}
	fmt.Fprintf(e.Stderr, "%s: %s, %s dropped, %d invalid\n", plural(rc.Lines, "line", "lines"), plural(rc.Valid, "valid CPF", "valid CPFs"),
		plural(rc.Duplicates, "duplicate", "duplicates"), len(rc.Invalid))
	if rc.Error != "" {
		fmt.Fprintf(e.Stderr, "batchhook submit: %s\n", rc.Error)
		return 1
	}
	fmt.Fprintf(e.Stderr, "submission %s: %s to submit\n", rc.SubmissionID, plural(rc.Chunks, "batch", "batches"))
	if *noWait {
		if *asJSON {
			return exitOf(printJSON(e.Stdout, raw), e.Stderr)
		}
		fmt.Fprintln(e.Stdout, rc.SubmissionID)
		return 0
	}
	return waitSubmitted(ctx, c, rc.SubmissionID, *every, *asJSON, e)
}

// waitSubmitted polls the submission until no chunk waits, then prints the
// batch ids and says which chunks did not make it.
func waitSubmitted(ctx context.Context, c *adminClient, id string, every time.Duration, asJSON bool, e Env) int {
	tty := logging.IsTerminal(e.Stderr)
	lastKey := ""
	for {
		raw, err := c.do(ctx, http.MethodGet, "/admin/submissions/"+url.PathEscape(id))
		if err != nil {
			fmt.Fprintf(e.Stderr, "\nbatchhook submit: %v (the daemon keeps submitting: batchhook submissions show %s)\n", err, id)
			return 1
		}
		var sub admin.SubmissionView
		if err := json.Unmarshal(raw, &sub); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), e.Stderr)
		}
		counts := map[string]int{}
		for _, ch := range sub.Chunks {
			counts[ch.State]++
		}
		pending := counts["waiting"] + counts["sending"]
		why := ""
		if pending > 0 {
			why = waitingNote(sub.Waiting)
		}
		switch {
		case tty:
			line := fmt.Sprintf("submitted %d/%d batches", counts["submitted"], len(sub.Chunks))
			if why != "" {
				line += "; " + why
			}
			fmt.Fprintf(e.Stderr, "\r\x1b[K%s", line)
		case why != "" && waitingKey(sub.Waiting) != lastKey:
			// Not a terminal: one line each time the reason changes, with
			// the chunk's last error in full (a log has no width).
			if w := sub.Waiting; w.LastError != "" {
				why += " (last error: " + w.LastError + ")"
			}
			fmt.Fprintln(e.Stderr, why)
			lastKey = waitingKey(sub.Waiting)
		}
		if pending == 0 {
			if tty {
				fmt.Fprintln(e.Stderr)
			}
			return reportSubmitted(sub, raw, counts, asJSON, e)
		}
		if w := sub.Waiting; w != nil && w.ErrorKind == string(submit.OutcomeAuth) {
			// Waiting on would hang a script for ever: only an operator
			// mends a refused key. The reason was printed above.
			if tty {
				fmt.Fprintln(e.Stderr)
			}
			fmt.Fprintf(e.Stderr, "batchhook submit: stopped waiting: %s; the daemon keeps the submission and sends it once the key is fixed: batchhook submissions show %s\n", w.Hint, id)
			return 1
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(e.Stderr, "\nstopped waiting; the daemon keeps submitting: batchhook submissions show %s\n", id)
			return 1
		case <-time.After(every):
		}
	}
}

func reportSubmitted(sub admin.SubmissionView, raw []byte, counts map[string]int, asJSON bool, e Env) int {
	if asJSON {
		if err := printJSON(e.Stdout, raw); err != nil {
			return exitOf(err, e.Stderr)
		}
	} else {
		for _, ch := range sub.Chunks {
			if ch.BatchID != "" {
				fmt.Fprintln(e.Stdout, ch.BatchID)
			}
		}
	}
	bad := 0
	for _, ch := range sub.Chunks {
		if ch.State == "failed" || ch.State == "submit_unknown" {
			bad++
			line := fmt.Sprintf("chunk %d (%s) %s: %s", ch.Index, plural(ch.CPFs, "CPF", "CPFs"), ch.State, ch.LastError)
			if n := chunkNote(ch); n != "" {
				line += " (" + n + ")"
			} else if h := chunkHint(ch); h != "" {
				line += " (" + h + ")"
			}
			fmt.Fprintln(e.Stderr, line)
		}
	}
	if bad > 0 {
		fmt.Fprintf(e.Stderr, "batchhook submit: %d of %s not submitted (%d failed, %d submit_unknown: see docs/operations.md)\n",
			bad, plural(len(sub.Chunks), "batch was", "batches were"), counts["failed"], counts["submit_unknown"])
		return 1
	}
	return 0
}

const submissionsUsage = `Usage:
  batchhook submissions list [--limit N] [--cursor C] [--json] [--admin URL]
  batchhook submissions show ID [--json] [--admin URL]
  batchhook submissions unknown [--json] [--admin URL]
  batchhook submissions resend ID CHUNK [--admin URL]

"list" lists the submissions, newest first: id, when, batches submitted
of all, valid CPFs, and the state (submitted; incomplete: some chunk failed
or is submit_unknown; waiting, with why and what to do).
"show" lists a submission's batches (chunks) and their states; "unknown"
lists the chunks left submit_unknown: the provider may have accepted them,
so batchhook never sends them again by itself. "resend" puts a failed or
submit_unknown chunk back in the queue: do it only after checking with the
provider that it was not accepted (it bills per CPF found). A chunk whose
line says "CPFs purged" lost its CPFs after BATCHHOOK_RECORD_RETENTION and
cannot be resent: submit its CPFs again, from your own file, as a new
submission.
`

func submissionsCmd(ctx context.Context, args []string, e Env) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.Stderr, submissionsUsage)
		return 2
	}
	sub := args[0]
	if sub == "list" {
		return submissionsList(ctx, args[1:], e)
	}
	fs := newFlags("submissions "+sub, submissionsUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submissions: %v\n", err)
		return 2
	}
	var (
		raw    []byte
		chunks []admin.ChunkView
	)
	switch {
	case sub == "show" && len(pos) == 1:
		raw, err = c.do(ctx, http.MethodGet, "/admin/submissions/"+url.PathEscape(pos[0]))
		var s admin.SubmissionView
		if err == nil {
			err = json.Unmarshal(raw, &s)
		}
		chunks = s.Chunks
	case sub == "unknown" && len(pos) == 0:
		raw, err = c.do(ctx, http.MethodGet, "/admin/chunks?state=submit_unknown&limit=1000")
		var page struct {
			Items []admin.ChunkView `json:"items"`
		}
		if err == nil {
			err = json.Unmarshal(raw, &page)
		}
		chunks = page.Items
	case sub == "resend" && len(pos) == 2:
		if _, err := strconv.Atoi(pos[1]); err != nil {
			fmt.Fprintf(e.Stderr, "batchhook submissions resend: CHUNK must be a chunk index, got %q\n", pos[1])
			return 2
		}
		raw, err = c.do(ctx, http.MethodPost, "/admin/submissions/"+url.PathEscape(pos[0])+"/chunks/"+pos[1]+"/resend")
		if err == nil {
			fmt.Fprintf(e.Stdout, "chunk %s of %s is queued again\n", pos[1], pos[0])
			return 0
		}
		err = resendNotFound(ctx, c, err, pos[0], pos[1])
	default:
		fmt.Fprintf(e.Stderr, "batchhook submissions: bad arguments\n%s", submissionsUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submissions %s: %v\n", sub, err)
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(e.Stdout, raw), e.Stderr)
	}
	printChunks(e.Stdout, chunks)
	return 0
}

// printChunks prints chunks as a table, with a NOTE column only when some
// chunk has a note.
func printChunks(w io.Writer, chunks []admin.ChunkView) {
	notes := slices.ContainsFunc(chunks, func(ch admin.ChunkView) bool { return chunkNote(ch) != "" })
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	header := "SUBMISSION\tCHUNK\tSTATE\tCPFS\tBATCH\tBATCH STATE\tATTEMPTS\tLAST ERROR"
	if notes {
		header += "\tNOTE"
	}
	fmt.Fprintln(tw, header)
	for _, ch := range chunks {
		row := fmt.Sprintf("%s\t%d\t%s\t%d\t%s\t%s\t%d\t%s", ch.SubmissionID, ch.Index, ch.State, ch.CPFs, ch.BatchID,
			ch.BatchState, ch.Attempts, oneLine(ch.LastError, 60))
		if notes {
			row += "\t" + chunkNote(ch)
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

const trackUsage = `Usage:
  batchhook track [--admin URL] ID...
  batchhook resubmit [--json] [--admin URL] ID

"track" makes batchhook poll batches submitted elsewhere until final, then
fetch and export them. "resubmit" submits again the CPFs that an exported
expired or partial batch shows unresolved (docs/how-it-works.md,
"Submitting, and never missing a batch").
`

func trackCmd(ctx context.Context, args []string, e Env) int {
	fs := newFlags("track", trackUsage, e.Stderr)
	_, client := adminFlags(fs)
	ids, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(ids) == 0 {
		fmt.Fprint(e.Stderr, trackUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook track: %v\n", err)
		return 2
	}
	code := 0
	for _, id := range ids {
		raw, err := c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(id)+"/track")
		if err != nil {
			fmt.Fprintf(e.Stderr, "batchhook track %s: %v\n", id, err)
			code = 1
			continue
		}
		var b admin.BatchView
		_ = json.Unmarshal(raw, &b)
		fmt.Fprintf(e.Stdout, "%s\t%s\n", b.ID, b.State)
	}
	return code
}

func resubmitCmd(ctx context.Context, args []string, e Env) int {
	fs := newFlags("resubmit", trackUsage, e.Stderr)
	asJSON, client := adminFlags(fs)
	ids, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(ids) != 1 {
		fmt.Fprint(e.Stderr, trackUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook resubmit: %v\n", err)
		return 2
	}
	raw, err := c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(ids[0])+"/resubmit")
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook resubmit: %v\n", err)
		return 1
	}
	if *asJSON {
		return exitOf(printJSON(e.Stdout, raw), e.Stderr)
	}
	var rc admin.ReceiptView
	if err := json.Unmarshal(raw, &rc); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), e.Stderr)
	}
	fmt.Fprintf(e.Stdout, "submission %s: %s of %s in %s\n", rc.SubmissionID, plural(rc.Valid, "CPF", "CPFs"), ids[0], plural(rc.Chunks, "batch", "batches"))
	return 0
}
