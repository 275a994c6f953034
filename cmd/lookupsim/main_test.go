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
