package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// ValidateNATSSink checks the nats sink's variables (docs/sinks.md, "nats sink").
// The URL must not carry credentials: they come from the credentials
// file or the token, which follow the secret rules of the others.
func (c *Config) ValidateNATSSink() error {
	v := Var("NATS_URL")
	if c.NatsURL == "" {
		return fmt.Errorf("%s: required when %s includes nats", v, Var("SINKS"))
	}
	if strings.Contains(c.NatsURL, "@") {
		return fmt.Errorf("%s: must not carry credentials or an @ (use %s or %s; the value is not shown)",
			v, Var("NATS_CREDS_FILE"), Var("NATS_TOKEN"))
	}
	for _, one := range strings.Split(c.NatsURL, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			return fmt.Errorf("%s: %s must be a comma list of nats://, tls://, ws:// or wss:// host:port URLs", v, quoteURL(c.NatsURL))
		}
	}
	s := c.NatsSubject
	if s == "" || strings.ContainsAny(s, "*> \t\r\n") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return fmt.Errorf("%s: %q must be a literal subject (no wildcards, blanks or empty tokens)", Var("NATS_SUBJECT"), s)
	}
	for name, path := range map[string]string{"NATS_CREDS_FILE": c.NatsCredsFile, "NATS_TLS_CA_FILE": c.NatsTLSCaFile} {
		if path == "" {
			continue
		}
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %q is not a readable regular file", Var(name), path)
		}
	}
	if c.NatsCredsFile != "" && len(c.NatsToken) > 0 {
		return fmt.Errorf("%s and %s: set only one way to authenticate", Var("NATS_CREDS_FILE"), Var("NATS_TOKEN"))
	}
	if c.NatsPublishTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", Var("NATS_PUBLISH_TIMEOUT"))
	}
	return nil
}
