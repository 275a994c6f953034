package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/internal/gateway"
)

const sandboxUsage = `Usage:
  batchhook sandbox deposit --amount 10.50 --first-name F --last-name L --email E --document-number CPF
        [--message M] [--ip-address IP] [--phone-number P] [--merchant-transaction-id ID] [--json]
  batchhook sandbox withdraw --amount 10.50 --pix-key-value V [--pix-key-type email] [--pix-message M]
        --first-name F --last-name L --document-number CPF [--merchant-transaction-id ID] [--json]
  batchhook sandbox pay PROCESSOR_TRANSACTION_ID|QRCODE_URL [--json]
  batchhook sandbox receive QRCODE_URL|REF [--json]
  batchhook sandbox refund QRCODE_URL|REF [--json]

Rehearses the provider's sandbox payments gateway (docs/provider-api.md §4.4): deposit
and withdraw create a pending transaction (POST {gateway_url}/api/pix/charge
or /api/pix/pay); pay, receive and refund open the sandbox's simulation URL,
which makes the provider send a signed payment webhook. receive takes the
withdrawal's qrcode URL as given (or builds it from a REF); refund replaces
that URL's last segment by "refund".

Before any call: --amount is positive with at most two decimals (sent as a
JSON number with the digits given), --document-number a CPF with valid
check digits. Without --merchant-transaction-id a new UUID is used and
printed on stderr. Personal fields are masked in the table; --json prints
the reply as received.

Environment (the daemon's settings are not read): BATCHHOOK_GATEWAY_URL,
BATCHHOOK_SANDBOX_URL, and, when the gateway wants one header on its calls
(the document does not show its authentication), BATCHHOOK_GATEWAY_AUTH_HEADER
with BATCHHOOK_GATEWAY_AUTH_VALUE or BATCHHOOK_GATEWAY_AUTH_VALUE_FILE.

Exit status: 0 done; 1 the gateway or sandbox answered non-2xx (one line with
the status and its reason) or could not be reached; 2 bad flags or settings.
`

// usageError is a refused flag or setting: exit 2, one line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func sandboxCmd(ctx context.Context, args []string, e Env) int {
	sub, code, ok := subcommand(args, sandboxUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("sandbox "+sub, sandboxUsage, e.Stderr)
	var err error
	switch sub {
	case "deposit", "withdraw":
		err = sandboxCreate(ctx, fs, sub, args[1:], e)
	case gateway.Pay, gateway.Receive, gateway.Refund:
		err = sandboxSimulate(ctx, fs, sub, args[1:], e)
	default:
		fmt.Fprintf(e.Stderr, "batchhook sandbox: unknown command %q\n%s", sub, sandboxUsage)
		return 2
	}
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlagParse):
		return 2 // the flag package has said why
	case errors.As(err, &ue):
		fmt.Fprintf(e.Stderr, "batchhook sandbox %s: %v\n", sub, err)
		return 2
	default:
		fmt.Fprintf(e.Stderr, "batchhook sandbox %s: %v\n", sub, err)
		return 1
	}
}

// errFlagParse: the flag package refused the command line and printed why.
var errFlagParse = errors.New("bad flags")

// parseSandboxFlags parses fs over args and returns the positional ones.
func parseSandboxFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	if err != nil {
		return nil, errFlagParse
	}
	return pos, nil
}

// gatewayClient loads the gateway settings (exit 2 on a bad one).
func gatewayClient() (*gateway.Client, config.Gateway, error) {
	g, err := config.LoadGateway()
	if err != nil {
		return nil, g, &usageError{err.Error()}
	}
	return gateway.New(g.GatewayURL, g.SandboxURL, g.AuthHeader, g.AuthValue), g, nil
}

// sandboxCreate runs deposit or withdraw.
func sandboxCreate(ctx context.Context, fs *flag.FlagSet, sub string, args []string, e Env) error {
	asJSON := fs.Bool("json", false, "print the gateway's reply as received")
	amount := fs.String("amount", "", "amount, positive, at most two decimals (10.50)")
	mtid := fs.String("merchant-transaction-id", "", "your id for the transaction (default: a new UUID, printed)")
	first := fs.String("first-name", "", "payer's first name")
	last := fs.String("last-name", "", "payer's last name")
	doc := fs.String("document-number", "", "payer's CPF (check digits verified)")
	var email, message, ip, phone, keyType, keyValue, pixMessage *string
	if sub == "deposit" {
		email = fs.String("email", "", "payer's e-mail")
		message = fs.String("message", "", "message")
		ip = fs.String("ip-address", "", "payer's IP address")
		phone = fs.String("phone-number", "", "payer's phone number")
	} else {
		keyType = fs.String("pix-key-type", "email", "pix key type (the document shows email)")
		keyValue = fs.String("pix-key-value", "", "pix key")
		pixMessage = fs.String("pix-message", "", "pix message")
	}
	pos, err := parseSandboxFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments (%d); every value is a flag", len(pos))
	}
	a, err := gateway.ParseAmount(*amount)
	if err != nil {
		return usagef("--amount: %v", err)
	}
	cpfDigits, err := cpf.Normalize(*doc)
	if err != nil {
		return usagef("--document-number: not a valid CPF (%v)", err)
	}
	required := [][2]string{{"--first-name", *first}, {"--last-name", *last}}
	if sub == "deposit" {
		required = append(required, [2]string{"--email", *email})
	} else {
		required = append(required, [2]string{"--pix-key-type", *keyType}, [2]string{"--pix-key-value", *keyValue})
	}
	for _, r := range required {
		if strings.TrimSpace(r[1]) == "" {
			return usagef("%s is required", r[0])
		}
	}
	if *mtid == "" {
		*mtid = gateway.NewUUID()
		fmt.Fprintf(e.Stderr, "merchant_transaction_id: %s (generated)\n", *mtid)
	}
	c, g, err := gatewayClient()
	if err != nil {
		return err
	}
	if g.GatewayURL == "" {
		return usagef("%s is not set", config.Var("GATEWAY_URL"))
	}
	var reply []byte
	if sub == "deposit" {
		reply, err = c.CreateDeposit(ctx, gateway.Deposit{
			Amount: a, MerchantTransactionID: *mtid, FirstName: *first, LastName: *last, Email: *email,
			DocumentNumber: cpfDigits, Message: *message, IPAddress: *ip, PhoneNumber: *phone,
		})
	} else {
		reply, err = c.CreateWithdrawal(ctx, gateway.Withdrawal{
			MerchantTransactionID: *mtid, Amount: a, PixKeyType: *keyType, PixKeyValue: *keyValue,
			PixMessage: *pixMessage, FirstName: *first, LastName: *last, DocumentNumber: cpfDigits,
		})
	}
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if *asJSON {
		return printRaw(e.Stdout, reply)
	}
	s, err := gateway.Summarize(reply)
	if err != nil {
		return err
	}
	printTransaction(e.Stdout, s)
	return nil
}

// printTransaction writes the transaction table and the next step.
func printTransaction(w io.Writer, s gateway.Summary) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	rows := [][2]string{
		{"transaction", s.ID}, {"merchant_transaction_id", s.MerchantTransactionID}, {"type", s.Type},
		{"flow", s.Flow}, {"status", s.Status}, {"amount", s.Amount}, {"created_at", s.CreatedAt},
		{"name", s.Name}, {"email", s.Email}, {"document", s.Document},
		{"processor_transaction_id", s.ProcessorTransactionID}, {"simulation URL", s.QRCode},
	}
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], oneLine(r[1], 300))
		}
	}
	tw.Flush()
	switch {
	case s.ProcessorTransactionID != "":
		fmt.Fprintf(w, "next: batchhook sandbox pay %s\n", s.ProcessorTransactionID)
	case s.QRCode != "":
		fmt.Fprintf(w, "next: batchhook sandbox receive %s   (or refund)\n", s.QRCode)
	}
}

// sandboxSimulate runs pay, receive or refund.
func sandboxSimulate(ctx context.Context, fs *flag.FlagSet, action string, args []string, e Env) error {
	asJSON := fs.Bool("json", false, "print the sandbox's reply as received")
	pos, err := parseSandboxFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one argument, the qrcode URL or the reference")
	}
	c, g, err := gatewayClient()
	if err != nil {
		return err
	}
	u, err := gateway.SimulationURL(pos[0], g.SandboxURL, action)
	if errors.Is(err, gateway.ErrNotConfigured) {
		return usagef("%s is not set (or give the full qrcode URL)", config.Var("SANDBOX_URL"))
	}
	if err != nil {
		return usagef("argument: %v", err)
	}
	reply, err := c.Simulate(ctx, u)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if *asJSON {
		return printRaw(e.Stdout, reply)
	}
	printSimulation(e.Stdout, action, reply)
	return nil
}

// printSimulation shows what the sandbox said: the scalar members of a
// JSON object, one a line, or else the start of its text. The document
// does not show this reply, so nothing in it is relied upon.
func printSimulation(w io.Writer, action string, reply []byte) {
	var obj map[string]any
	if json.Unmarshal(reply, &obj) != nil {
		fmt.Fprintf(w, "%s: done; the sandbox answered: %s\n", action, oneLine(cpf.Scrub(string(reply)), 200))
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	for _, k := range keys {
		switch v := obj[k].(type) {
		case string, float64, bool:
			fmt.Fprintf(tw, "%s:\t%s\n", k, oneLine(cpf.Scrub(fmt.Sprint(v)), 200))
		}
	}
	tw.Flush()
}

// printRaw writes a reply exactly as received, plus a final newline when
// it has none.
func printRaw(w io.Writer, raw []byte) error {
	if _, err := w.Write(raw); err != nil {
		return err
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}
