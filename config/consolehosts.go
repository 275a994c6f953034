package config

import (
	"fmt"
	"net"
	"strings"
)

// ConsoleHostNames parses CONSOLE_HOSTS: a comma list of the names under
// which the console answers besides loopback ones (the Host a browser
// sends, without the port), lower-cased. On a loopback admin listener the
// console refuses every other Host, so that a DNS-rebinding page cannot
// reach the sign-in form; the operator names here the public name a
// reverse proxy or a tunnel presents. Each must be a DNS name or an IP
// address; a port, a scheme, a path or a wildcard is refused. Empty =
// none.
func (c *Config) ConsoleHostNames() ([]string, error) {
	var out []string
	for _, f := range strings.Split(c.ConsoleHosts, ",") {
		f = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(f)), ".")
		if f == "" {
			continue
		}
		if !validHostName(f) && net.ParseIP(f) == nil {
			return nil, fmt.Errorf("%s: %q is not a host name such as batchhook.example.org (no scheme, port, path or wildcard)", Var("CONSOLE_HOSTS"), f)
		}
		out = append(out, f)
	}
	return out, nil
}

// validHostName reports whether s is a DNS name: dot-separated labels of
// letters, digits and inner hyphens, 63 bytes each at most.
func validHostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
