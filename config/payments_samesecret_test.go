package config_test

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// The provider gives each product its own secret (docs/provider-api.md §5.2): with one
// secret for both, the payments path would accept a batch.completed body
// and the batch path a payment, so the cross-product refusal batchhook
// promises would silently not hold.
func TestPaymentsSecretMustDifferFromTheBatchSecret(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", reqSecret)
	_, err := config.Load(config.TestSinks)
	if err == nil || !namesVar(err.Error(), "BATCHHOOK_PAYMENTS_SIGNING_SECRET") || !namesVar(err.Error(), "BATCHHOOK_SIGNING_SECRET") {
		t.Fatalf("same secret for both products: %v; want an error naming both variables", err)
	}
	if strings.Contains(err.Error(), reqSecret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
	t.Setenv("BATCHHOOK_PAYMENTS_SIGNING_SECRET", reqSecret+"-payments")
	mustLoad(t)
}
