package config

import (
	"fmt"
	"net"
	"strings"
)

// TrustedProxyNets parses TRUSTED_PROXIES: a comma list of CIDRs (a bare
// IP counts as its own /32 or /128). Requests from these peers are logged
// with the client address their X-Forwarded-For / X-Real-IP names; from
// any other peer the headers are ignored. Empty = none trusted.
func (c *Config) TrustedProxyNets() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, f := range strings.Split(c.TrustedProxies, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			ip := net.ParseIP(f)
			if ip == nil {
				return nil, fmt.Errorf("%s: %q is neither a CIDR (10.0.0.0/8) nor an IP address", Var("TRUSTED_PROXIES"), f)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR such as 10.0.0.0/8 or 127.0.0.1/32", Var("TRUSTED_PROXIES"), f)
		}
		if ones, _ := n.Mask.Size(); ones == 0 {
			return nil, fmt.Errorf("%s: %q would trust every address; name the proxies' addresses", Var("TRUSTED_PROXIES"), f)
		}
		out = append(out, n)
	}
	return out, nil
}
