package httpserver

import "testing"

// HostAllowed: a loopback listener answers loopback names and the
// configured ones; another listener answers anything until names are
// configured, then loopback names, IP addresses and those names (a
// rebinding page's Host is always its own DNS name).
func TestHostAllowed(t *testing.T) {
	names := []string{"ops.example.org"}
	for _, tc := range []struct {
		host     string
		loopback bool
		names    []string
		want     bool
	}{
		{"localhost:9090", true, nil, true},
		{"127.0.0.1:9090", true, nil, true},
		{"[::1]:9090", true, nil, true},
		{"rebind.evil.example", true, nil, false},
		{"rebind.evil.example:9090", true, nil, false},
		{"192.0.2.7:9090", true, nil, false},
		{"ops.example.org", true, names, true},
		{"OPS.example.org.:443", true, names, true},
		{"ops.example.org.evil.example", true, names, false},
		{"rebind.evil.example", true, names, false},
		{"rebind.evil.example", false, nil, true},
		{"rebind.evil.example", false, names, false},
		{"ops.example.org:8443", false, names, true},
		{"192.0.2.7:9090", false, names, true},
		{"[2001:db8::1]:9090", false, names, true},
		{"localhost", false, names, true},
	} {
		if got := HostAllowed(tc.host, tc.loopback, tc.names); got != tc.want {
			t.Errorf("HostAllowed(%q, loopback %v, %v) = %v, want %v", tc.host, tc.loopback, tc.names, got, tc.want)
		}
	}
}
