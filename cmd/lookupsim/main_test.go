package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPaymentsFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o, _, err := parseFlags([]string{"-api-key", "k", "-payments-webhook-url", "http://127.0.0.1:1/webhooks/payments",
		"-payments-secret-file", write("p", "pay secret \n"), "-gateway-auth-header", "X-Key",
		"-gateway-auth-value-file", write("g", "gw\r\n"), "-duplicate-payment-deliveries", "2",
		"-sign-payments-with-batch-secret"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if string(o.PaymentsSigningSecret) != "pay secret " || string(o.GatewayAuthValue) != "gw" || o.GatewayAuthHeader != "X-Key" ||
		o.PaymentsWebhookURL == "" || o.Faults.DuplicatePaymentDeliveries != 2 || !o.Faults.SignPaymentsWithBatchSecret {
		t.Fatalf("options %+v", o)
	}
	_, _, err = parseFlags([]string{"-api-key", "k", "-payments-secret-file", write("e", "\n")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-payments-secret-file") {
		t.Fatalf("empty payments secret file: %v", err)
	}
}

// TestRequiredFlagsAreNamed: a missing required setting is said with the
// flag the user types, not the Go field of lookupsim.Options behind it.
func TestRequiredFlagsAreNamed(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "-api-key is required"},
		{[]string{"-api-key", ""}, "-api-key is required"},
		{[]string{"-api-key", "k", "-webhook-url", "http://127.0.0.1:1/hook"}, "-secret-file is required with -webhook-url"},
		{[]string{"-api-key", "k", "-payments-webhook-url", "http://127.0.0.1:1/p"}, "-payments-secret-file is required"},
		{[]string{"-api-key", "k", "-gateway-auth-header", "X-Key"}, "-gateway-auth-value-file go together"},
		{[]string{"-api-key", "k", "-gateway-auth-value-file", secret}, "-gateway-auth-header and"},
	} {
		var stderr strings.Builder
		if code := run(t.Context(), tt.args, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2; stderr:\n%s", tt.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: stderr %q, want it to say %q", tt.args, stderr.String(), tt.want)
		}
		for _, field := range []string{"APIKey", "SigningSecret", "WebhookURL", "GatewayAuth"} {
			if strings.Contains(stderr.String(), field) {
				t.Errorf("%q: stderr %q names the Go field %s", tt.args, stderr.String(), field)
			}
		}
	}
}
