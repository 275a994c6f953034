package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SinkRule is what Validate needs to know of one sink: its name in
// BATCHHOOK_SINKS and the checks of its own variables. config knows no
// sink by itself: the daemon's sink registry (daemon.SinkRules) hands the
// rules to Load and Validate, so that a sink is registered in one place.
type SinkRule struct {
	Name string
	// Check validates the sink's variables when BATCHHOOK_SINKS names it;
	// nil when it has none.
	Check func(*Config) error
	// CheckPayments validates its payment variables when BATCHHOOK_SINKS
	// names it, after every Check; nil when it has none.
	CheckPayments func(*Config) error
}

// SinkNames returns the sinks of BATCHHOOK_SINKS in the order given,
// without blanks or repeats. Validate has checked them.
func (c *Config) SinkNames() []string {
	var out []string
	for _, s := range strings.Split(c.Sinks, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ExecSinkArgv returns BATCHHOOK_EXEC_SINK_COMMAND decoded (Validate has
// checked it): the argv of the exec sink, without the export directory
// the sink appends.
func (c *Config) ExecSinkArgv() []string {
	var argv []string
	_ = json.Unmarshal([]byte(c.ExecSinkCommand), &argv)
	return argv
}

// DecodeSinkSecret decodes a Standard Webhooks secret, "whsec_" followed
// by standard base64 of 24 to 64 bytes, into the HMAC key. Its errors
// never quote the value.
func DecodeSinkSecret(s Secret) (Secret, error) {
	rest, ok := strings.CutPrefix(string(s), "whsec_")
	if !ok {
		return nil, errors.New(`must have the form whsec_<base64> (Standard Webhooks)`)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, errors.New("the part after whsec_ is not standard base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("decodes to %d bytes; want 24 to 64", len(key))
	}
	return Secret(key), nil
}

// validateSinks checks BATCHHOOK_SINKS against sinks and the variables
// of each sink it names, in the order of sinks; it returns the first
// problem, naming the variable.
func (c *Config) validateSinks(sinks []SinkRule) error {
	var known []string
	for _, r := range sinks {
		known = append(known, r.Name)
	}
	names := c.SinkNames()
	if len(names) == 0 {
		return fmt.Errorf("%s: must name at least one sink (%s)", Var("SINKS"), strings.Join(known, ", "))
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("%s: unknown sink %s (want a comma list of %s)", Var("SINKS"), strconv.Quote(n), strings.Join(known, ", "))
		}
	}
	if c.SinkWorkers < 1 || c.SinkWorkers > 64 {
		return fmt.Errorf("%s: must be between 1 and 64", Var("SINK_WORKERS"))
	}
	for _, r := range sinks {
		if r.Check != nil && slices.Contains(names, r.Name) {
			if err := r.Check(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// validatePaymentSinks runs the payment checks of the sinks named.
func (c *Config) validatePaymentSinks(sinks []SinkRule) error {
	names := c.SinkNames()
	for _, r := range sinks {
		if r.CheckPayments != nil && slices.Contains(names, r.Name) {
			if err := r.CheckPayments(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateHTTPSink checks the http sink's variables.
func (c *Config) ValidateHTTPSink() error {
	if c.HTTPSinkURL == "" {
		return fmt.Errorf("%s: required when %s includes http", Var("HTTP_SINK_URL"), Var("SINKS"))
	}
	if strings.Contains(c.HTTPSinkURL, "@") {
		return fmt.Errorf("%s: must not carry credentials or an @ (the value is not shown)", Var("HTTP_SINK_URL"))
	}
	u, err := url.Parse(c.HTTPSinkURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %s must be an absolute http or https URL%s", Var("HTTP_SINK_URL"), quoteURL(c.HTTPSinkURL), schemeHint(c.HTTPSinkURL))
	}
	if len(c.HTTPSinkSecret) == 0 {
		return fmt.Errorf("%s or %s: required when %s includes http, and must not be empty",
			Var("HTTP_SINK_SECRET"), Var("HTTP_SINK_SECRET_FILE"), Var("SINKS"))
	}
	if _, err := DecodeSinkSecret(c.HTTPSinkSecret); err != nil {
		return fmt.Errorf("%s or %s: %w", Var("HTTP_SINK_SECRET"), Var("HTTP_SINK_SECRET_FILE"), err)
	}
	if c.HTTPSinkMaxItems < 1 || c.HTTPSinkMaxItems > 10000 {
		return fmt.Errorf("%s: must be between 1 and 10000", Var("HTTP_SINK_MAX_ITEMS"))
	}
	if c.HTTPSinkTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", Var("HTTP_SINK_TIMEOUT"))
	}
	return nil
}

// ValidateExecSink checks the exec sink's variables.
func (c *Config) ValidateExecSink() error {
	v := Var("EXEC_SINK_COMMAND")
	if c.ExecSinkCommand == "" {
		return fmt.Errorf("%s: required when %s includes exec (a JSON array such as [\"/usr/local/bin/load\",\"--quiet\"])", v, Var("SINKS"))
	}
	var argv []string
	if err := json.Unmarshal([]byte(c.ExecSinkCommand), &argv); err != nil {
		return fmt.Errorf("%s: must be a JSON array of strings (no shell): %v", v, err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%s: the array must start with the program to run", v)
	}
	if !filepath.IsAbs(argv[0]) {
		if _, err := exec.LookPath(argv[0]); err != nil {
			return fmt.Errorf("%s: %s is not an absolute path and is not found on PATH", v, strconv.Quote(argv[0]))
		}
	}
	if c.ExecSinkTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", Var("EXEC_SINK_TIMEOUT"))
	}
	return nil
}
