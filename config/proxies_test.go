package config

import (
	"strings"
	"testing"
)

func TestTrustedProxyNets(t *testing.T) {
	c := Config{TrustedProxies: " 10.0.0.0/8, 127.0.0.1 ,::1,fd00::/8,"}
	nets, err := c.TrustedProxyNets()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nets {
		got = append(got, n.String())
	}
	if strings.Join(got, " ") != "10.0.0.0/8 127.0.0.1/32 ::1/128 fd00::/8" {
		t.Fatalf("nets = %v", got)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.local", "0.0.0.0/0", "10.0.0.0/8,::/0"} {
		c := Config{TrustedProxies: bad}
		if _, err := c.TrustedProxyNets(); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_TRUSTED_PROXIES") {
			t.Errorf("%q: %v, want an error naming the variable", bad, err)
		}
	}
}
