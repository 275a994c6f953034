package main

import (
	"errors"

	"github.com/batchhook/batchhook/config"
)

// errPaymentsNotWired: this build's daemon has no payments endpoint yet.
var errPaymentsNotWired = errors.New("--payments needs the daemon's payments endpoint (issue 13), which this build does not have yet")

// wireDemoPayments turns on the daemon's payments endpoint with the demo's
// payments secret and returns the endpoint's path, for the simulator's
// payments webhook URL.
//
// At the merge with the payments endpoint (config.Config gains
// PaymentsSigningSecret and PaymentsWebhookPath) the body becomes:
//
//	cfg.PaymentsSigningSecret = config.Secret(secret)
//	return cfg.PaymentsWebhookPath, nil
func wireDemoPayments(cfg *config.Config, secret string) (string, error) {
	_, _ = cfg, secret
	return "", errPaymentsNotWired
}
