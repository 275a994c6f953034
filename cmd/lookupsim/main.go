// Command lookupsim runs the provider simulator (package lookupsim) as a
// standalone server, so batchhook can be tried by hand against a fake CPF
// Batch Lookup Service with chosen outcomes and faults.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, serves until ctx ends and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	logger := log.New(stderr, "", log.LstdFlags)
	opts, addr, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lookupsim: %v\n", err)
		return 2
	}
	opts.Logf = logger.Printf
	sim, err := lookupsim.New(opts) // its errors already say "lookupsim:"
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if _, err := sim.Start(addr); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	logger.Printf("lookupsim: serving %s (webhook: %t, payments webhook: %t, gateway auth: %t)",
		sim.URL(), opts.WebhookURL != "", opts.PaymentsWebhookURL != "", opts.GatewayAuthHeader != "")
	<-ctx.Done()
	logger.Printf("lookupsim: stopping")
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sim.Close(closeCtx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// parseFlags turns the command line into Options and the listen address.
func parseFlags(args []string, stderr io.Writer) (lookupsim.Options, string, error) {
	var o lookupsim.Options
	fs := flag.NewFlagSet("lookupsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	fs.StringVar(&o.APIKey, "api-key", "", "Bearer key clients must send (required)")
	secretFile := fs.String("secret-file", "", "file holding the webhook signing secret (one final line ending dropped)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "registered webhook URL; empty sends no notifications")
	fs.StringVar(&o.PaymentsWebhookURL, "payments-webhook-url", "", "where payment events go (batchhook: /webhooks/payments); empty sends none")
	paymentsSecretFile := fs.String("payments-secret-file", "", "file holding the payments signing secret (required with -payments-webhook-url)")
	fs.StringVar(&o.GatewayAuthHeader, "gateway-auth-header", "", "header every gateway call must carry (with -gateway-auth-value-file); unset: no check")
	gatewayValueFile := fs.String("gateway-auth-value-file", "", "file holding the value of -gateway-auth-header")
	fs.StringVar(&o.SandboxURL, "sandbox-url", "", "base URL written into qrcode links (default: this server's own URL)")
	fs.DurationVar(&o.ProcessingDelay, "delay", lookupsim.DefaultProcessingDelay, "time a batch stays in flight")
	outcomes := fs.String("outcomes", "completed", "final statuses, comma-separated, cycled in submission order")
	fs.DurationVar(&o.Retention, "retention", lookupsim.DefaultRetention, "how long results stay readable after completion")
	fs.DurationVar(&o.DeliveryTimeout, "delivery-timeout", lookupsim.DefaultDeliveryTimeout, "timeout of one webhook attempt")
	fs.DurationVar(&o.RetryBackoff, "retry-backoff", lookupsim.DefaultRetryBackoff, "spacing after the first failed attempt (doubles, 1m cap)")
	fs.IntVar(&o.MaxAttempts, "max-attempts", lookupsim.DefaultMaxAttempts, "webhook attempts per batch")
	perMinute := fs.Int("submit-per-minute", lookupsim.DefaultSubmitPerMinute, "submissions accepted in any rolling 60s; 0 disables")
	inFlight := fs.Int("max-in-flight", lookupsim.DefaultMaxInFlight, "batches not yet final; 0 disables")
	fs.IntVar(&o.Faults.FailGETs, "fail-gets", 0, "fault: the first N GETs answer -fail-status")
	fs.IntVar(&o.Faults.FailStatus, "fail-status", 500, "fault: status of failed GETs (429 or 5xx)")
	fs.DurationVar(&o.Faults.RetryAfter, "retry-after", time.Second, "fault: Retry-After sent with 429s")
	fs.IntVar(&o.Faults.DropGETs, "drop-gets", 0, "fault: the next N GETs are dropped without a response")
	fs.DurationVar(&o.Faults.SlowPage, "slow-page", 0, "fault: delay before each GET answers")
	fs.IntVar(&o.Faults.DuplicateDeliveries, "duplicate-deliveries", 0, "fault: deliver each acknowledged webhook N more times")
	fs.BoolVar(&o.Faults.DropNotifications, "drop-notifications", false, "fault: never send webhooks")
	fs.IntVar(&o.Faults.DuplicatePaymentDeliveries, "duplicate-payment-deliveries", 0, "fault: deliver each acknowledged payment event N more times")
	fs.BoolVar(&o.Faults.SignPaymentsWithBatchSecret, "sign-payments-with-batch-secret", false, "fault: sign payment events with the batch secret")
	fs.BoolVar(&o.Faults.DropPaymentNotifications, "drop-payment-notifications", false, "fault: never send payment events")
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	if fs.NArg() > 0 {
		return o, "", fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	o.SubmitPerMinute, o.MaxInFlight = limitFlag(*perMinute), limitFlag(*inFlight)
	var statuses []string
	for _, s := range strings.Split(*outcomes, ",") {
		s = strings.TrimSpace(s)
		if !lookupsim.IsFinalStatus(s) {
			return o, "", fmt.Errorf("-outcomes: %q is not completed, partial, expired or failed", s)
		}
		statuses = append(statuses, s)
	}
	o.Outcome = lookupsim.Cycle(statuses...)
	for _, f := range []struct {
		flag, path string
		dst        *[]byte
	}{
		{"-secret-file", *secretFile, &o.SigningSecret},
		{"-payments-secret-file", *paymentsSecretFile, &o.PaymentsSigningSecret},
		{"-gateway-auth-value-file", *gatewayValueFile, &o.GatewayAuthValue},
	} {
		if f.path == "" {
			continue
		}
		secret, err := readSecret(f.flag, f.path)
		if err != nil {
			return o, "", err
		}
		*f.dst = secret
	}
	if err := requireFlags(o); err != nil {
		return o, "", err
	}
	return o, *addr, nil
}

// requireFlags checks what lookupsim.New requires in the words of the
// command line: New's own errors name the Go fields (APIKey), which a user
// of this command never sees.
func requireFlags(o lookupsim.Options) error {
	switch {
	case o.APIKey == "":
		return errors.New("-api-key is required: the Bearer key clients must send (batchhook sends BATCHHOOK_API_KEY)")
	case o.WebhookURL != "" && len(o.SigningSecret) == 0:
		return errors.New("-secret-file is required with -webhook-url: the file holding the secret that signs webhooks (batchhook's BATCHHOOK_SIGNING_SECRET)")
	case o.PaymentsWebhookURL != "" && len(o.PaymentsSigningSecret) == 0:
		return errors.New("-payments-secret-file is required with -payments-webhook-url")
	case (o.GatewayAuthHeader == "") != (len(o.GatewayAuthValue) == 0):
		return errors.New("-gateway-auth-header and -gateway-auth-value-file go together")
	}
	return nil
}

// limitFlag maps the flags' "0 disables" to the package's Unlimited.
func limitFlag(n int) int {
	if n == 0 {
		return lookupsim.Unlimited
	}
	return n
}

// readSecret returns the file's bytes, with one final "\n" or "\r\n"
// dropped (the rule batchhook applies to its own secret files).
func readSecret(flagName, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", flagName, err)
	}
	if t, ok := bytes.CutSuffix(b, []byte("\r\n")); ok {
		b = t
	} else {
		b, _ = bytes.CutSuffix(b, []byte("\n"))
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", flagName)
	}
	return b, nil
}
