package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Gateway is what `batchhook sandbox` reads: where the provider's payments
// gateway and its sandbox are, and the one header gateway calls carry. It
// is separate from the daemon's settings on purpose (DECISIONS 29): the
// sandbox client runs on an operator's machine without the daemon's
// secrets.
type Gateway struct {
	// GatewayURL is {gateway_url}; empty when unset (deposit and withdraw
	// then refuse to run).
	GatewayURL string
	// SandboxURL is {sandbox_url}; empty when unset (pay, and receive or
	// refund given a bare ref, then refuse to run). Never assumed equal to
	// GatewayURL, though the simulator serves both.
	SandboxURL string
	// AuthHeader and AuthValue, set together, are added to every gateway
	// call. docs/provider-api.md does not show how gateway calls
	// authenticate: this is our assumption (docs/payments.md).
	AuthHeader string
	AuthValue  Secret
}

// LoadGateway reads BATCHHOOK_GATEWAY_URL, BATCHHOOK_SANDBOX_URL,
// BATCHHOOK_GATEWAY_AUTH_HEADER and BATCHHOOK_GATEWAY_AUTH_VALUE or
// BATCHHOOK_GATEWAY_AUTH_VALUE_FILE (the secret rules of the daemon: not
// both, one final line ending dropped from a file, empty is an error).
// Errors name the variable and never quote a value that may hold a
// credential.
func LoadGateway() (Gateway, error) {
	var g Gateway
	for _, v := range []struct {
		name string
		dst  *string
	}{{Var("GATEWAY_URL"), &g.GatewayURL}, {Var("SANDBOX_URL"), &g.SandboxURL}} {
		raw, set := os.LookupEnv(v.name)
		if !set {
			continue
		}
		if err := validateServiceURL(raw); err != nil {
			return g, fmt.Errorf("%s: %w", v.name, err)
		}
		*v.dst = strings.TrimRight(raw, "/")
	}
	g.AuthHeader = os.Getenv(Var("GATEWAY_AUTH_HEADER"))
	value, err := loadSecret(os.LookupEnv, "GATEWAY_AUTH_VALUE", os.Getenv(Var("GATEWAY_AUTH_VALUE_FILE")), nil)
	if err != nil {
		return g, err
	}
	if _, set := os.LookupEnv(Var("GATEWAY_AUTH_VALUE")); set && len(value) == 0 {
		return g, fmt.Errorf("%s: set but empty", Var("GATEWAY_AUTH_VALUE"))
	}
	g.AuthValue = value
	switch {
	case g.AuthHeader != "" && !isToken(g.AuthHeader):
		return g, fmt.Errorf("%s: %q is not an HTTP header name", Var("GATEWAY_AUTH_HEADER"), g.AuthHeader)
	case g.AuthHeader != "" && len(g.AuthValue) == 0:
		return g, fmt.Errorf("%s is set: set %s or %s too", Var("GATEWAY_AUTH_HEADER"), Var("GATEWAY_AUTH_VALUE"), Var("GATEWAY_AUTH_VALUE_FILE"))
	case g.AuthHeader == "" && len(g.AuthValue) > 0:
		return g, fmt.Errorf("%s is set: set %s too (the header that carries it)", Var("GATEWAY_AUTH_VALUE"), Var("GATEWAY_AUTH_HEADER"))
	}
	return g, nil
}

// validateServiceURL checks a gateway or sandbox base URL: absolute http or
// https, with no credentials, query or fragment (a credential belongs in the
// auth variables, where it is never printed).
func validateServiceURL(raw string) error {
	if raw == "" {
		return errors.New("set but empty")
	}
	shown := quoteURL(raw)
	u, err := url.Parse(raw)
	switch {
	case !strings.Contains(raw, "://"): // "127.0.0.1:8081" does not even parse
		return fmt.Errorf("%s must be an absolute http or https URL%s", shown, schemeHint(raw))
	case err != nil:
		return fmt.Errorf("%s is not a URL", shown)
	case u.User != nil:
		return errors.New("must not carry credentials (user:password@); use the GATEWAY_AUTH_* variables")
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%s must be an absolute http or https URL%s", shown, schemeHint(raw))
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Errorf("%s must not carry a query or fragment", shown)
	}
	return nil
}

// isToken reports whether s is an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
