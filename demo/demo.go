// Package demo is "batchhook demo": the whole pipeline on loopback, the
// provider simulator and the daemon on kernel-chosen ports, one sample
// batch from submission to a checked export, so that a newcomer sees it
// work in one command. It also holds the pieces the end-to-end tests share
// with it: the export check (CheckExport), a Standard Webhooks receiver
// (Receiver) and the payments day-file check.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/logging"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// usage is what "batchhook demo --help" prints before the flags.
const usage = `Usage: batchhook demo [-cpfs N] [-timeout D] [--sink http] [--payments] [--keep=false]

Runs the whole pipeline on loopback with embedded defaults: the provider
simulator and the daemon on kernel-chosen ports, a fresh directory
(printed), one sample batch submitted to the simulator, its signed webhook
received, its result pages fetched and exported. It checks the export
against what the simulator served, then prints what to try next. Logs go
to stderr. Exit 0 on success, 1 with the reason otherwise.

The directory is kept (DECISIONS 10), and the last line on stdout is
"export: <absolute path>", after the command that runs the daemon again on
the kept directory (its secrets are files there) and the CLI commands to
try on it. --keep=false removes it at the end instead (it holds a
database, sample CPFs and the demo's secrets); the last line is then
"removed: <directory> (…)". A demo that fails always keeps it.

With --sink http the daemon also delivers the export (BATCHHOOK_SINKS=file,http)
to a Standard Webhooks receiver the demo runs on loopback, with a whsec_
secret it generates, in parts of 100 items. The receiver verifies every
signature with its own code, and the demo checks that the parts put back
together are the export before it prints
"delivered: <url> (N parts, M items, signatures verified)".

With --payments the simulator also plays the payments gateway: the demo
creates a deposit and pays it, a withdrawal and receives it, another and
refunds it (with the client of "batchhook sandbox"); the simulator signs
each payment webhook with a payments secret the demo generates and sends
it to the daemon's payments endpoint, and the demo checks that the day
files under EXPORT_DIR/payments hold each event once, with the provider's
bytes, before it prints "payments: <files> (…)". The payments secret is kept
in the demo directory (payments-signing-secret, 0600), and the printed serve
command names it.
`

// Run is "batchhook demo" with the arguments after its name: it runs the
// demo, reports on stdout (logs on stderr) and returns the exit code: 0
// when the export was checked, 1 when the demo failed, 2 on a usage error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	n := fs.Int("cpfs", 250, "CPFs in the sample batch (1 to 1000)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up when the batch is not exported (and delivered) within this time")
	sinkName := fs.String("sink", "file", "file (the export only) or http (also deliver it to a verifying receiver on loopback)")
	payments := fs.Bool("payments", false, "also run a deposit and two withdrawals through the sandbox and check their payment events were delivered")
	keep := fs.Bool("keep", true, "keep the demo directory (database, export, secrets) and print how to run the daemon and the CLI on it; --keep=false removes it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *n < 1 || *n > 1000 {
		fmt.Fprintln(stderr, "batchhook demo: -cpfs must be between 1 and 1000")
		return 2
	}
	if *sinkName != "file" && *sinkName != "http" {
		fmt.Fprintln(stderr, "batchhook demo: --sink must be file or http")
		return 2
	}
	dir, err := os.MkdirTemp("", "batchhook-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "batchhook demo: create demo dir: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "demo dir: %s\n", dir)
	res, err := runDemo(ctx, dir, *n, *timeout, *sinkName == "http", *payments, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook demo: %v\n", err)
		fmt.Fprintf(stderr, "batchhook demo: the demo directory is kept for inspection: %s\n", dir)
		return 1
	}
	printNextSteps(stdout, dir, res, *keep)
	if !*keep {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "batchhook demo: remove %s: %v\n", dir, err)
			return 1
		}
		fmt.Fprintf(stdout, "removed: %s (the export was checked first; --keep=false removed it)\n", dir)
		return 0
	}
	fmt.Fprintf(stdout, "export: %s\n", res.exportPath)
	return 0
}

// demoResult is what a successful demo leaves behind.
type demoResult struct {
	batchID    string
	exportPath string
	// payments: the demo ran with --payments, and its payments secret is
	// in demoPaymentsSecretFile.
	payments bool
}

// runDemo runs the pipeline in dir (0700, from os.MkdirTemp). Its
// secrets are also written to 0600 files there, so that the daemon can be
// run again on a kept directory (printNextSteps).
func runDemo(ctx context.Context, dir string, n int, timeout time.Duration, withHTTP, withPayments bool, stdout, stderr io.Writer) (demoResult, error) {
	start := time.Now()
	secret, apiKey, paySecret := randomHex(32), randomHex(16), ""
	files := map[string]string{demoSecretFile: secret, demoAPIKeyFile: apiKey, demoAdminTokenFile: randomHex(24)}
	if withPayments {
		paySecret = randomHex(32)
		files[demoPaymentsSecretFile] = paySecret
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			return demoResult{}, fmt.Errorf("write demo secret: %w", err)
		}
	}

	cfg := config.Defaults()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.ExportDir = filepath.Join(dir, "data", "exports")
	cfg.SigningSecret, cfg.APIKey = config.Secret(secret), config.Secret(apiKey)
	cfg.LogFormat = "console"
	cfg.BackoffBase = 200 * time.Millisecond

	// Bind the webhook port first: the simulator needs its URL.
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return demoResult{}, fmt.Errorf("bind webhook listener: %w", err)
	}
	simOpts := lookupsim.Options{
		APIKey: apiKey, SigningSecret: []byte(secret),
		WebhookURL:      "http://" + ln.Addr().String() + cfg.WebhookPath,
		ProcessingDelay: time.Second,
	}
	if withPayments {
		cfg.PaymentsSigningSecret = config.Secret(paySecret)
		simOpts.PaymentsWebhookURL = "http://" + ln.Addr().String() + cfg.PaymentsWebhookPath
		simOpts.PaymentsSigningSecret = []byte(paySecret)
	}
	sim, err := lookupsim.New(simOpts)
	if err != nil {
		ln.Close()
		return demoResult{}, fmt.Errorf("create simulator: %w", err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		ln.Close()
		return demoResult{}, fmt.Errorf("start simulator: %w", err)
	}
	defer sim.Close(context.Background())
	cfg.APIBaseURL = sim.URL()
	var recv *demoReceiver
	if withHTTP {
		if recv, err = startDemoReceiver(&cfg); err != nil {
			ln.Close()
			return demoResult{}, err
		}
		defer recv.close()
	}
	if err := cfg.Validate(daemon.SinkRules()); err != nil {
		ln.Close()
		return demoResult{}, err
	}

	d := daemon.New(cfg, logging.New("info", "console", stderr))
	if err := d.Start(ln); err != nil {
		return demoResult{}, fmt.Errorf("start daemon: %w", err)
	}
	defer d.Stop(context.Background())
	fmt.Fprintf(stdout, "daemon: http://%s%s  simulator: %s\n", d.Addr(), cfg.WebhookPath, sim.URL())

	id, err := sim.Submit(lookupsim.SampleCPFs(n, time.Now().UnixNano()))
	if err != nil {
		return demoResult{}, fmt.Errorf("submit sample batch: %w", err)
	}
	fmt.Fprintf(stdout, "submitted batch %s with %s\n", id, plural(n, "CPF", "CPFs"))

	b, err := waitFinal(ctx, d, id, timeout)
	if err != nil {
		return demoResult{}, err
	}
	if b.State != store.StateExported {
		return demoResult{}, fmt.Errorf("batch %s ended %s: %s", id, b.State, b.LastError)
	}
	if err := CheckExport(b.ExportPath, sim, id); err != nil {
		return demoResult{}, err
	}
	fmt.Fprintf(stdout, "exported batch %s: status %s, %d items in %d pages, identical to what the provider served\n",
		id, b.Notification.Status, b.Checkpoint.Items, b.Checkpoint.Pages)
	if recv != nil {
		if err := recv.waitAndCheck(ctx, d, id, b.ExportPath, timeout-time.Since(start), stdout); err != nil {
			return demoResult{}, err
		}
	}
	if withPayments {
		flows, err := runPaymentFlows(ctx, sim, stdout)
		if err != nil {
			return demoResult{}, err
		}
		files, err := WaitPaymentDayFiles(ctx, filepath.Join(cfg.ExportDir, PaymentsDir), flows, timeout-time.Since(start))
		if err != nil {
			return demoResult{}, err
		}
		fmt.Fprintf(stdout, "payments: %s (%d events: %s; each once, bytes as signed)\n",
			strings.Join(files, ", "), len(flows), describeFlows(flows))
	}
	return demoResult{batchID: id, exportPath: b.ExportPath, payments: withPayments}, nil
}

// waitFinal polls the batch record until it is final, ctx ends or timeout passes.
func waitFinal(ctx context.Context, d *daemon.Daemon, id string, timeout time.Duration) (*store.Batch, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := d.Batch(id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("read batch %s: %w", id, err)
		}
		if err == nil && b.State.Final() {
			return b, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted before batch %s was exported", id)
		case <-deadline.C:
			state := "not yet notified"
			if b != nil {
				state = fmt.Sprintf("%s (last error: %s)", b.State, b.LastError)
			}
			return nil, fmt.Errorf("batch %s not exported within %s: %s", id, timeout, state)
		case <-tick.C:
		}
	}
}

// CheckExport compares the export with the simulator's own record of what
// it served, byte for byte.
func CheckExport(dir string, sim *lookupsim.Server, id string) error {
	ok, err := export.Verify(dir)
	if err != nil || !ok {
		return fmt.Errorf("export %s does not verify against its manifest (%v)", dir, err)
	}
	items, ok := sim.Results(id)
	if !ok {
		return fmt.Errorf("simulator has no results for %s", id)
	}
	var want bytes.Buffer
	for _, it := range items {
		want.Write(it)
		want.WriteByte('\n')
	}
	got, err := os.ReadFile(filepath.Join(dir, export.ResultsFile))
	if err != nil {
		return fmt.Errorf("read export: %w", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		return fmt.Errorf("export %s differs from what the simulator served", dir)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// plural writes n with the singular or plural noun: "1 CPF", "3 CPFs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
