package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
)

const statusUsage = `Usage: batchhook status [--json] [--admin URL]

One screen of the running daemon's health (GET /admin/status): readiness,
build, which daemon answered (its listeners and data directory), the last
webhook accepted and its age, webhooks refused with 401 and requests to
unknown paths, the queue, the sinks, the provider, how the previous run
ended, and warnings that say what to do.
--json prints the admin API's reply instead (the same fields).

Exit status: 0 ready and no warnings; 1 the daemon answered but is not
ready, has warnings, or refused the request (a 401: the token); 2 a usage
error; 3 the daemon could not be reached.
Environment: BATCHHOOK_ADMIN_URL (default http://127.0.0.1:9090),
BATCHHOOK_ADMIN_TOKEN or BATCHHOOK_ADMIN_TOKEN_FILE.
`

// The exit codes of batchhook status (DECISIONS 36): a script or a probe
// tells "unhealthy" (1) from "not there" (3).
const (
	statusOK          = 0
	statusAttention   = 1
	statusBadUsage    = 2
	statusUnreachable = 3
)

func statusCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("status", statusUsage, stderr)
	asJSON, client := adminFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return statusBadUsage
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "batchhook status: unexpected argument %q\n%s", pos[0], statusUsage)
		return statusBadUsage
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook status: %v\n", err)
		return statusBadUsage
	}
	raw, err := c.do(ctx, http.MethodGet, "/admin/status")
	if err != nil {
		return statusFailed(err, stderr)
	}
	var v admin.StatusView
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(stderr, "batchhook status: decode the admin API's reply: %v\n", err)
		return statusAttention
	}
	if *asJSON {
		if err := printJSON(stdout, raw); err != nil {
			fmt.Fprintf(stderr, "batchhook status: %v\n", err)
			return statusAttention
		}
	} else {
		printStatus(stdout, v)
	}
	if !v.Ready || len(v.Warnings) > 0 {
		return statusAttention
	}
	return statusOK
}

// statusFailed says why no status came and picks the exit code: 3 when
// nothing answered (no connection, no reply), 1 when the daemon answered
// with an error (a 401 included: something is there, the token is wrong).
func statusFailed(err error, stderr io.Writer) int {
	var ae *apiError
	if errors.As(err, &ae) {
		if ae.status == http.StatusNotFound {
			err = fmt.Errorf("%w (this daemon does not serve /admin/status: is it older than this batchhook?)", err)
		} else {
			err = explain(err)
		}
		fmt.Fprintf(stderr, "batchhook status: %v\n", err)
		return statusAttention
	}
	fmt.Fprintf(stderr, "batchhook status: %v\n", err)
	var ue *url.Error
	if errors.As(err, &ue) {
		return statusUnreachable
	}
	return statusAttention
}

// printStatus writes the one screen: a line a topic, the sinks as a table,
// then the warnings.
func printStatus(w io.Writer, v admin.StatusView) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	ready := "yes"
	if !v.Ready {
		ready = "NO: " + v.NotReadyReason
	}
	fmt.Fprintf(tw, "ready\t%s\n", ready)
	fmt.Fprintf(tw, "build\t%s, commit %s, %s\n", v.Build.Version, shortCommit(v.Build.Commit), v.Build.Go)
	fmt.Fprintf(tw, "started\t%s (up %s)\n", timeOrDash(v.StartedAt), admin.FormatAge(time.Duration(v.UptimeSeconds)*time.Second))
	// Which daemon answered: a leftover one on the same ports shows
	// another data directory.
	fmt.Fprintf(tw, "webhook listener\t%s\n", orDash(v.ListenAddr))
	fmt.Fprintf(tw, "admin listener\t%s\n", orDash(v.AdminAddr))
	fmt.Fprintf(tw, "data dir\t%s\n", orDash(v.DataDir))
	for _, p := range []string{"batch", "payments"} {
		la, ok := v.LastAccepted[p]
		if !ok {
			continue
		}
		last := "none since start"
		if la.At != nil && la.AgeSeconds != nil {
			last = fmt.Sprintf("%s (%s ago)", la.At.UTC().Format(time.RFC3339), admin.FormatAge(time.Duration(*la.AgeSeconds)*time.Second))
		}
		fmt.Fprintf(tw, "last %s webhook\t%s\n", p, last)
	}
	fmt.Fprintf(tw, "unknown paths\t%s since start%s\n", plural(int(v.NotFoundRequests), "request", "requests"), lastAgo(v.LastNotFound))
	fmt.Fprintf(tw, "refused (401)\t%d since start%s\n", v.UnauthorizedWebhooks, lastAgo(v.LastUnauthorized))
	fmt.Fprintf(tw, "quarantined (400)\t%d since start%s\n", v.QuarantinedWebhooks, lastAgo(v.LastQuarantined))
	fmt.Fprintf(tw, "batches\t%s\n", stateCounts(v.Queue.Batches, store.States))
	oldest := "none pending"
	if v.Queue.OldestAgeSeconds != nil {
		oldest = "oldest pending " + admin.FormatAge(time.Duration(*v.Queue.OldestAgeSeconds)*time.Second)
	}
	fmt.Fprintf(tw, "queue\t%d in flight, %s\n", v.Queue.InFlight, oldest)
	fmt.Fprintf(tw, "chunks\t%s\n", stateCounts(v.Chunks, store.ChunkStates))
	if len(v.Sinks) == 0 {
		// The daemon lists its delivery sinks; with none, file is the only
		// sink (one is required), and it has no outbox to show.
		fmt.Fprintln(tw, "sinks\tfile only (exports on disk; no delivery queue)")
	}
	fmt.Fprintf(tw, "provider\t%s\n", providerLine(v.Provider))
	prev := "stopped cleanly (or first start)"
	if p := v.PreviousRunFailed; p != nil {
		prev = "FAILED: " + p.Reason
		if p.When != nil {
			prev += " (" + p.When.UTC().Format(time.RFC3339) + ")"
		}
	}
	fmt.Fprintf(tw, "previous run\t%s\n", prev)
	tw.Flush()
	if len(v.Sinks) > 0 || len(v.PaymentSinks) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "SINK\tPENDING\tFAILED\tOLDEST PENDING")
		for _, s := range v.Sinks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", s.Name, s.Pending, s.Failed, ageOrDash(s.OldestAgeSeconds))
		}
		for _, s := range v.PaymentSinks {
			fmt.Fprintf(tw, "%s (payments)\t%d\t-\t%s\n", s.Name, s.Backlog, ageOrDash(s.OldestAgeSeconds))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if len(v.Warnings) == 0 {
		fmt.Fprintln(w, "no warnings")
		return
	}
	fmt.Fprintf(w, "%s:\n", plural(len(v.Warnings), "warning", "warnings"))
	for _, s := range v.Warnings {
		fmt.Fprintf(w, "  - %s\n", s)
	}
}

// stateCounts lists the states in their order, those at 0 left out.
func stateCounts[S ~string](counts map[string]int, states []S) string {
	var parts []string
	for _, s := range states {
		if n := counts[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func providerLine(p admin.ProviderView) string {
	var parts []string
	switch p.LastAnswer {
	case "":
		parts = append(parts, "no call yet")
	case "none":
		parts = append(parts, "last call got no answer")
	default:
		parts = append(parts, "last answer "+p.LastAnswer)
	}
	if p.KeyRefused {
		parts = append(parts, fmt.Sprintf("API KEY REFUSED (%d in a row)", p.KeyRefusals))
	}
	if p.Misconfigured {
		parts = append(parts, "MISCONFIGURED (404 to everything)")
	}
	return strings.Join(parts, "; ")
}

// lastAgo is ", last 2m ago", or nothing when none came.
func lastAgo(l admin.LastSeenView) string {
	if l.AgeSeconds == nil {
		return ""
	}
	return ", last " + admin.FormatAge(time.Duration(*l.AgeSeconds)*time.Second) + " ago"
}

func ageOrDash(s *int64) string {
	if s == nil {
		return "-"
	}
	return admin.FormatAge(time.Duration(*s) * time.Second)
}

// shortCommit is the first 12 digits of a commit, as git shows them.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
