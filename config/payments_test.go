package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

func TestPaymentsDisabledUnlessASecretIsSet(t *testing.T) {
	requiredEnv(t)
	c := mustLoad(t)
	if c.PaymentsEnabled() {
		t.Fatal("payments enabled without BATCHHOOK_PAYMENTS_SIGNING_SECRET")
	}
	if c.PaymentsWebhookPath != "/webhooks/payments" {
		t.Errorf("default path = %q", c.PaymentsWebhookPath)
	}
	want := [][]string{{"transaction", "id"}, {"transaction", "status"}, {"transaction", "updated_at"}}
	if got := c.PaymentsDedupPaths(); !reflect.DeepEqual(got, want) {
		t.Errorf("default dedup paths = %q, want %q", got, want)
	}
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", "pay")
	if c := mustLoad(t); !c.PaymentsEnabled() || string(c.PaymentsSigningSecret) != "pay" {
		t.Fatalf("with a secret: enabled=%v", c.PaymentsEnabled())
	}
}

func TestPaymentsSecretRules(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", "")
	if _, err := config.Load(config.TestSinks); err == nil || !namesVar(err.Error(), "BATCHHOOK_PAYMENTS_SIGNING_SECRET") {
		t.Fatalf("empty payments secret: %v, want an error naming BATCHHOOK_PAYMENTS_SIGNING_SECRET", err)
	}
	file := writeFile(t, "pay-from-file\n")
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE", file)
	if _, err := config.Load(config.TestSinks); err == nil || !strings.Contains(err.Error(), "set only one") {
		t.Fatalf("both set: %v, want an error", err)
	}
	os.Unsetenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET")
	c := mustLoad(t)
	if string(c.PaymentsSigningSecret) != "pay-from-file" {
		t.Fatalf("secret from file = %q", []byte(c.PaymentsSigningSecret))
	}
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE", writeFile(t, "\n"))
	if _, err := config.Load(config.TestSinks); err == nil || !namesVar(err.Error(), "BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE") {
		t.Fatalf("empty payments secret file: %v, want an error naming the _FILE variable", err)
	}
}

func TestPaymentsSecretNeverInErrors(t *testing.T) {
	requiredEnv(t)
	const secret = "pay-S3cr3t-value"
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", secret)
	t.Setenv("BATCHHOOK_PAYMENTS_WEBHOOK_PATH", "/webhooks/batch-completed")
	_, err := config.Load(config.TestSinks)
	if err == nil {
		t.Fatal("same path for both products accepted")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error leaks the secret: %v", err)
	}
}

func TestPaymentsPathRules(t *testing.T) {
	for _, tt := range []struct {
		path, secret string
		ok           bool
	}{
		{"/hooks/pay", "s", true},
		{"hooks/pay", "", false},
		{"/hooks/pay?x=1", "", false},
		{"/hooks/*", "s", false},
		{"/webhooks/batch-completed", "s", false}, // the batch webhook's path
		{"/webhooks/batch-completed", "", true},   // payments off: no clash
	} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_PAYMENTS_WEBHOOK_PATH", tt.path)
		if tt.secret != "" {
			t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", tt.secret)
		}
		_, err := config.Load(config.TestSinks)
		if tt.ok != (err == nil) {
			t.Errorf("path %q (secret %v): err = %v, want ok=%v", tt.path, tt.secret != "", err, tt.ok)
		}
		if err != nil && !namesVar(err.Error(), "BATCHHOOK_PAYMENTS_WEBHOOK_PATH") {
			t.Errorf("path %q: error %q does not name BATCHHOOK_PAYMENTS_WEBHOOK_PATH", tt.path, err)
		}
	}
}

func TestPaymentsDedupFieldsRules(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  [][]string // nil: an error
	}{
		{"transaction.id", [][]string{{"transaction", "id"}}},
		{"id, data.status ,a.b.c", [][]string{{"id"}, {"data", "status"}, {"a", "b", "c"}}},
		{"", nil},
		{"transaction.id,", nil},
		{",transaction.id", nil},
		{"transaction..id", nil},
		{".id", nil},
		{"id.", nil},
		{"a. b", nil},
		{"transaction.id,transaction.id", nil},
		{"transaction.id, transaction.id", nil},
	} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_PAYMENTS_DEDUP_FIELDS", tt.value)
		c, err := config.Load(config.TestSinks)
		if tt.want == nil {
			if err == nil || !namesVar(err.Error(), "BATCHHOOK_PAYMENTS_DEDUP_FIELDS") {
				t.Errorf("%q: err = %v, want an error naming BATCHHOOK_PAYMENTS_DEDUP_FIELDS", tt.value, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.value, err)
			continue
		}
		if got := c.PaymentsDedupPaths(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: paths %q, want %q", tt.value, got, tt.want)
		}
	}
}
