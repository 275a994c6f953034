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

// KnownSinks are the sink names BATCHHOOK_SINKS accepts (issue 11).
var KnownSinks = []string{"file", "http", "exec", "kafka", "nats"}

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

// DeliverySinks returns the configured sinks other than file: the ones
// with an outbox in the store.
func (c *Config) DeliverySinks() []string {
	return slices.DeleteFunc(c.SinkNames(), func(s string) bool { return s == "file" })
}

// KeepExports reports whether file is a configured sink: otherwise an
// export is removed once every sink has delivered it.
func (c *Config) KeepExports() bool { return slices.Contains(c.SinkNames(), "file") }

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

// validateSinks checks BATCHHOOK_SINKS and the variables of each sink it
// names; it returns the first problem, naming the variable.
func (c *Config) validateSinks() error {
	names := c.SinkNames()
	if len(names) == 0 {
		return fmt.Errorf("%s: must name at least one sink (%s)", Var("SINKS"), strings.Join(KnownSinks, ", "))
	}
	for _, n := range names {
		if !slices.Contains(KnownSinks, n) {
			return fmt.Errorf("%s: unknown sink %s (want a comma list of %s)", Var("SINKS"), strconv.Quote(n), strings.Join(KnownSinks, ", "))
		}
	}
	if c.SinkWorkers < 1 || c.SinkWorkers > 64 {
		return fmt.Errorf("%s: must be between 1 and 64", Var("SINK_WORKERS"))
	}
	if slices.Contains(names, "http") {
		if err := c.validateHTTPSink(); err != nil {
			return err
		}
	}
	if slices.Contains(names, "exec") {
		if err := c.validateExecSink(); err != nil {
			return err
		}
	}
	if slices.Contains(names, "kafka") {
		if err := c.validateKafkaSink(); err != nil {
			return err
		}
	}
	if slices.Contains(names, "nats") {
		if err := c.validateNATSSink(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateHTTPSink() error {
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

func (c *Config) validateExecSink() error {
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
