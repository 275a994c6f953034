package daemon

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestAdminBoundOffLoopbackWithoutTokenStopsTheStart: whatever the
// configuration said (here a Config built in code, past Validate), an admin
// listener the kernel bound to every interface without a token stops the
// start, and its port is released.
func TestAdminBoundOffLoopbackWithoutTokenStopsTheStart(t *testing.T) {
	cfg, ln, _ := testConfig(t, t.TempDir())
	probe, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	cfg.AdminAddr = probe.Addr().String()
	d := New(cfg, zerolog.Nop())
	err = d.Start(ln)
	if err == nil {
		d.Stop(t.Context())
		t.Fatal("started with the admin API on every interface and no token")
	}
	if !strings.Contains(err.Error(), "BATCHHOOK_ADMIN_TOKEN") || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("error %q does not say what to fix", err)
	}
	// Nothing may listen there after the refused start. A dial, not a
	// second Listen: an outgoing connection elsewhere may take the port as
	// its source port meanwhile, which a Listen would report as in use.
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 2*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("admin port %d still listens after the refused start", port)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial the admin port %d after the refused start: %v; want connection refused", port, err)
	}
}
