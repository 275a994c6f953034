package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/config"
)

// adminClient talks to the daemon's admin API.
type adminClient struct {
	base  string
	token config.Secret
	http  *http.Client
}

// commonFlags adds --admin and --json to fs and returns a constructor for
// the client once fs is parsed.
func commonFlags(fs *flag.FlagSet) (asJSON *bool, client func() (*adminClient, error)) {
	admin := fs.String("admin", "", "admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	asJSON = fs.Bool("json", false, "print JSON instead of a table")
	return asJSON, func() (*adminClient, error) { return newAdminClient(*admin) }
}

// newAdminClient is the admin API client for the URL admin, or
// $BATCHHOOK_ADMIN_URL (else the default) when it is empty.
func newAdminClient(admin string) (*adminClient, error) {
	env, err := config.LoadClient()
	if err != nil {
		return nil, err
	}
	base := env.AdminURL
	if admin != "" {
		base = admin
	}
	return &adminClient{base: strings.TrimRight(base, "/"), token: env.Token, http: &http.Client{Timeout: 15 * time.Second}}, nil
}

// apiError is a non-2xx reply of the admin API; body is the reply, for
// the routes that answer an error with details (a 422 intake).
type apiError struct {
	status int
	reason string
	body   []byte
}

func (e *apiError) Error() string { return fmt.Sprintf("admin API: HTTP %d: %s", e.status, e.reason) }

// do sends a request without a body and returns the body of a 2xx reply.
func (c *adminClient) do(ctx context.Context, method, path string) ([]byte, error) {
	return c.send(ctx, method, path, "", nil)
}

// send sends a request with body (of contentType) and returns the body of a
// 2xx reply.
func (c *adminClient) send(ctx context.Context, method, path, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(c.token) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(c.token))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the admin API at %s (is batchhook running? see --admin): %w", c.base, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read admin API reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(reply, &e)
		if e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return nil, &apiError{resp.StatusCode, e.Error, reply}
	}
	return reply, nil
}

func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("admin API returned invalid JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

type batchRow struct {
	ID            string     `json:"id"`
	State         string     `json:"state"`
	Status        string     `json:"status"`
	Source        string     `json:"source"`
	Pages         int64      `json:"pages"`
	Items         int64      `json:"items"`
	ReceivedAt    time.Time  `json:"received_at"`
	FetchAttempts int        `json:"fetch_attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastError     string     `json:"last_error"`
	ErrorKind     string     `json:"error_kind"`
	ExportPath    string     `json:"export_path"`
	Attempt       int        `json:"delivery_attempt"`
	Flags         []string   `json:"flags"`
	Refetch       bool       `json:"refetch"`
	SubmissionID  string     `json:"submission_id"`
	CPFCount      int        `json:"cpf_count"`
	SubmittedAt   *time.Time `json:"submitted_at"`
	PollAttempts  int        `json:"poll_attempts"`
	NextPollAt    *time.Time `json:"next_poll_at"`
	ExportRemoved bool       `json:"export_removed"`
	Refetches     int        `json:"refetches"`
	ExportVersion int        `json:"export_version"`
	Tombstone     *struct {
		PurgedAt       time.Time `json:"purged_at"`
		ExportPurgedAt time.Time `json:"export_purged_at"`
		RecordPurgedAt time.Time `json:"record_purged_at"`
		ManifestSHA256 string    `json:"manifest_sha256"`
		ManifestItems  int64     `json:"manifest_items"`
		NeverDelivered []string  `json:"never_delivered"`
	} `json:"tombstone"`
	Deliveries []deliveryRow `json:"deliveries"`
}

const batchesUsage = `Usage:
  batchhook batches list [--state S] [--limit N] [--cursor C] [--json] [--admin URL]
  batchhook batches show ID [--json] [--admin URL]
  batchhook batches refetch ID [--json] [--admin URL]
  batchhook batches redeliver ID --sink NAME [--json] [--admin URL]

Talks to the running daemon's admin API. For show, ID may be the first
characters of a batch id, when no other batch starts so; refetch and
redeliver take the whole id. Environment: BATCHHOOK_ADMIN_URL
(default http://127.0.0.1:9090), BATCHHOOK_ADMIN_TOKEN or
BATCHHOOK_ADMIN_TOKEN_FILE.
`

func batches(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, batchesUsage)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, batchesUsage)
		return 0
	}
	sub := args[0]
	fs := flag.NewFlagSet("batches "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, batchesUsage); fs.PrintDefaults() }
	asJSON, client := commonFlags(fs)
	state := fs.String("state", "", "only batches in this state (submitted, tracked, queued, fetching, exported, abandoned, purged)")
	limit := fs.Int("limit", 50, "batches per page (1 to 1000)")
	cursor := fs.String("cursor", "", "next_cursor of a previous page")
	sinkName := fs.String("sink", "", "redeliver: the sink to deliver to again (http, exec, …)")
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
	case sub == "redeliver" && len(pos) == 1 && *sinkName != "":
		raw, err = c.do(ctx, http.MethodPost, "/admin/batches/"+url.PathEscape(pos[0])+"/redeliver?"+url.Values{"sink": {*sinkName}}.Encode())
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
		var page struct {
			Items      []batchRow `json:"items"`
			NextCursor string     `json:"next_cursor"`
		}
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
		var d deliveryRow
		if err := json.Unmarshal(raw, &d); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		fmt.Fprintf(stdout, "batch %s queued for delivery to %s (version %d)\n", d.BatchID, d.Sink, d.Version)
		return 0
	}
	var b batchRow
	if err := json.Unmarshal(raw, &b); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	if sub == "refetch" {
		fmt.Fprintf(stdout, "batch %s queued for refetch; its export will be replaced\n", b.ID)
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

const quarantineUsage = `Usage:
  batchhook quarantine list [--limit N] [--cursor C] [--json] [--admin URL]
  batchhook quarantine show ID [--json] [--admin URL]

Signed deliveries that failed validation (400), with the reason. ID may be
the first few digits of an entry's id, when no other entry starts so. Same
environment as "batchhook batches".
`

func quarantine(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, quarantineUsage)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, quarantineUsage)
		return 0
	}
	sub := args[0]
	fs := flag.NewFlagSet("quarantine "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, quarantineUsage); fs.PrintDefaults() }
	asJSON, client := commonFlags(fs)
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
	type entry struct {
		ID         string    `json:"id"`
		Reason     string    `json:"reason"`
		Attempt    int       `json:"delivery_attempt"`
		ReceivedAt time.Time `json:"received_at"`
		Body       string    `json:"body"`
		Product    string    `json:"product"`
		BatchID    string    `json:"batch_id"`
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	if sub == "show" {
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		body := e.Body
		if e.Product == "payments" {
			body = "(not shown: a payments body may hold personal data)"
		}
		fmt.Fprintf(tw, "id:\t%s\nproduct:\t%s\nreason:\t%s\nreceived:\t%s\ndelivery attempt:\t%d\n", e.ID, e.Product,
			e.Reason, e.ReceivedAt.UTC().Format(time.RFC3339), e.Attempt)
		if e.BatchID != "" {
			fmt.Fprintf(tw, "batch id:\t%s\n", e.BatchID)
		}
		fmt.Fprintf(tw, "body:\t%s\n", body)
		tw.Flush()
		fmt.Fprintf(stdout, "\nnext step: %s\n", quarantineNextStep(e.Product, e.BatchID))
		return 0
	}
	var page struct {
		Items      []entry `json:"items"`
		NextCursor string  `json:"next_cursor"`
	}
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

// explain adds what to do to the common admin API errors.
func explain(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.status {
		case http.StatusUnauthorized:
			return fmt.Errorf("%w (set BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE)", err)
		case http.StatusNotFound:
			return fmt.Errorf("%w (no such batch or entry)", err)
		case http.StatusConflict:
			// The reason names the state; only a batch still on its way
			// needs the advice to wait.
			if strings.Contains(ae.reason, " is queued") || strings.Contains(ae.reason, " is fetching") {
				return fmt.Errorf("%w (wait until the batch is exported or abandoned)", err)
			}
			return err
		}
	}
	return err
}

func exitOf(err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "batchhook: %v\n", err)
		return 1
	}
	return 0
}

func oneLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// getReply is the common part of the read-only commands: it builds the
// admin client, GETs path and, with --json, prints the reply. done is
// true when the command ends here with code (an error, said in the
// command's words, or the JSON printed); otherwise raw is the reply to
// show as a table. A 404 is said as notFoundMsg when it is not empty.
func getReply(ctx context.Context, command string, client func() (*adminClient, error), path, notFoundMsg string, asJSON bool,
	stdout, stderr io.Writer) (raw []byte, code int, done bool) {
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook %s: %v\n", strings.Fields(command)[0], err)
		return nil, 2, true
	}
	raw, err = c.do(ctx, http.MethodGet, path)
	if err != nil {
		if notFoundMsg != "" {
			err = notFound(err, notFoundMsg)
		} else {
			err = explain(err)
		}
		fmt.Fprintf(stderr, "batchhook %s: %v\n", command, err)
		return nil, 1, true
	}
	if asJSON {
		return nil, exitOf(printJSON(stdout, raw), stderr), true
	}
	return raw, 0, false
}
