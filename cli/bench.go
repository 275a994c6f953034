package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/bench"
	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/logging"
)

const benchUsage = `Usage:
  batchhook bench --secret-file F [--url URL] [-c N] [--count N | --duration D]
                  [--invalid 0.1] [--replay 0.1] [--server-pid PID] [--json] [--allow-remote]
  batchhook bench --bare ADDR --secret-file F

Sends signed batch.completed notifications with unique batch ids (status
"failed", so a daemon records them without real fetching work) and prints
throughput and ack latency per outcome. --invalid and --replay mix in forged
signatures and replays of ids already sent. It refuses a target outside
loopback unless --allow-remote, and stops at --count or --duration.
--server-pid reads the server's CPU time from /proc to report CPU per request.
--bare runs the baseline instead: an echo handler that verifies the signature
and answers 200 with no storage, for ratios on the same machine.
`

func benchCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("bench", benchUsage, stderr)
	target := fs.String("url", "http://127.0.0.1:8080/webhooks/batch-completed", "webhook URL to load")
	secretFile := fs.String("secret-file", "", "signing secret file (required)")
	conc := fs.Int("c", 16, "concurrent requests")
	count := fs.Int("count", 0, "stop after this many requests")
	dur := fs.Duration("duration", 10*time.Second, "stop after this long (with --count, whichever comes first)")
	invalid := fs.Float64("invalid", 0, "share of requests with a forged signature (0 to 1)")
	replay := fs.Float64("replay", 0, "share of requests replaying an id already sent (0 to 1)")
	pid := fs.Int("server-pid", 0, "the server's pid, to report its CPU time per request")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	allowRemote := fs.Bool("allow-remote", false, "allow a target outside loopback")
	bare := fs.String("bare", "", "run the baseline server on this address instead of loading one")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	if *secretFile == "" {
		fmt.Fprintln(stderr, "batchhook bench: --secret-file is required")
		return 2
	}
	secret, err := config.ReadSecretFile(*secretFile)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook bench: %v\n", err)
		return 1
	}
	if *bare != "" {
		return serveBare(ctx, *bare, secret, stdout, stderr)
	}
	opts := bench.Options{URL: *target, Secret: secret, Concurrency: *conc, Count: *count, Duration: *dur,
		InvalidShare: *invalid, ReplayShare: *replay, AllowRemote: *allowRemote}
	if f, ok := stderr.(*os.File); ok && logging.IsTerminal(f) {
		opts.Progress = func(done int64, el time.Duration) {
			fmt.Fprintf(stderr, "\r%d requests, %.0f/s   ", done, float64(done)/el.Seconds())
		}
	}
	cpu0 := cpuTime(*pid)
	res, err := bench.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook bench: %v\n", err)
		return 2
	}
	cpuPerReq := time.Duration(0)
	if *pid > 0 && res.Requests > 0 {
		cpuPerReq = (cpuTime(*pid) - cpu0) / time.Duration(res.Requests)
	}
	if *asJSON {
		out := struct {
			*bench.Result
			ServerCPUPerRequest time.Duration `json:"server_cpu_per_request_ns,omitempty"`
		}{res, cpuPerReq}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOf(enc.Encode(out), stderr)
	}
	fmt.Fprintf(stdout, "%d requests in %s at c=%d: %.0f/s, p50 %s, p99 %s, %d errors", res.Requests, res.Elapsed.Round(time.Millisecond),
		res.Concurrent, res.PerSecond, ms(res.All.P50), ms(res.All.P99), res.Errors)
	if cpuPerReq > 0 {
		fmt.Fprintf(stdout, ", server CPU %s/request", cpuPerReq.Round(time.Microsecond))
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tREQUESTS\tP50\tP95\tP99\tMAX")
	for name, o := range res.ByOutcome {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", name, o.Requests, ms(o.P50), ms(o.P95), ms(o.P99), ms(o.Max))
	}
	tw.Flush()
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// cpuTime reads utime+stime of pid from /proc (0 when unknown).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

func serveBare(ctx context.Context, addr string, secret []byte, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook bench --bare: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: bench.Bare(secret, config.Defaults().WebhookPath, config.Defaults().MaxBodyBytes),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "bare baseline on http://%s%s (pid %d)\n", ln.Addr(), config.Defaults().WebhookPath, os.Getpid())
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "batchhook bench --bare: %v\n", err)
		return 1
	}
	return 0
}
