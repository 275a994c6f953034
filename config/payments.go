package config

import (
	"crypto/subtle"
	"fmt"
	"strings"
)

// The payments product. Its webhook shares the public listener
// with batch.completed but has its own path and its own secret: the
// provider signs each product with a different one (docs/provider-api.md §5.2).
// Without a payments secret the product is off and its path is 404, so an
// operator who only uses batches changes nothing.

// PaymentsEnabled reports whether the payments webhook is served: a
// payments signing secret is configured.
func (c *Config) PaymentsEnabled() bool { return len(c.PaymentsSigningSecret) > 0 }

// PaymentsDedupPaths splits BATCHHOOK_PAYMENTS_DEDUP_FIELDS into its dotted
// paths, each as its segments (Validate has checked them).
func (c *Config) PaymentsDedupPaths() [][]string {
	var out [][]string
	for _, p := range strings.Split(c.PaymentsDedupFields, ",") {
		out = append(out, strings.Split(strings.TrimSpace(p), "."))
	}
	return out
}

// validatePayments checks the payments variables. The path is checked even
// when payments are disabled (a typo should not wait for the day they are
// turned on); it must differ from the batch webhook's only when both are
// served.
func (c *Config) validatePayments() error {
	p := c.PaymentsWebhookPath
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#*: ") {
		return fmt.Errorf("%s: %q must be a plain path starting with /", Var("PAYMENTS_WEBHOOK_PATH"), p)
	}
	if c.PaymentsEnabled() && SameSecret(c.PaymentsSigningSecret, c.SigningSecret) {
		return fmt.Errorf("%s is the same as %s: the provider gives each product its own secret (docs/provider-api.md §5.2), and with one secret a batch.completed body would be accepted on the payments path and a payment on the batch path",
			Var("PAYMENTS_SIGNING_SECRET"), Var("SIGNING_SECRET"))
	}
	if c.PaymentsEnabled() && p == c.WebhookPath {
		return fmt.Errorf("%s: %q is also %s; the two products need their own paths",
			Var("PAYMENTS_WEBHOOK_PATH"), p, Var("WEBHOOK_PATH"))
	}
	return validateDedupFields(c.PaymentsDedupFields)
}

// validateDedupFields checks a comma list of dotted paths: at least one,
// every segment non-empty, no path twice.
func validateDedupFields(list string) error {
	v := Var("PAYMENTS_DEDUP_FIELDS")
	seen := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("%s: %q must be a comma list of dotted paths such as transaction.id, without empty entries", v, list)
		}
		for _, seg := range strings.Split(p, ".") {
			if seg == "" || strings.TrimSpace(seg) != seg {
				return fmt.Errorf("%s: path %q has an empty or blank-padded segment", v, p)
			}
		}
		if seen[p] {
			return fmt.Errorf("%s: path %q is listed twice", v, p)
		}
		seen[p] = true
	}
	return nil
}

// SameSecret reports whether two signing secrets are equal, in constant
// time: the payments secret must differ from the batch secret (at start
// and on every reload).
func SameSecret(a, b Secret) bool {
	return len(a) > 0 && subtle.ConstantTimeCompare(a, b) == 1
}
