package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// handedOut holds the ports freePort has given this test binary, so two
// tests never get the same one while a daemon between restarts leaves it
// unbound.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback address no one listens on, for a daemon the
// test may stop and start again on the same address (the simulator
// delivers there). The port is taken from below the kernel's ephemeral
// range: a port from that range (what Listen on :0 gives) can be picked
// as the source port of any outgoing connection while the daemon is down,
// and the restart then fails with "address already in use" (seen in CI).
func freePort(t *testing.T) string {
	t.Helper()
	lo := ephemeralLow()
	first := lo - 12000
	if first < 1024 {
		first = 1024
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 200 {
		port := first + rand.IntN(lo-first)
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		handedOut.ports[port] = true
		return ln.Addr().String()
	}
	t.Fatalf("no free port below the ephemeral range (from %d)", lo)
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err != nil || lo <= 1024 {
		return 32768
	}
	return lo
}

func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	t.Parallel()
	lo := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		addr := freePort(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port >= lo || port < 1024 {
			t.Fatalf("freePort gave %d; want below the ephemeral range starting at %d", port, lo)
		}
		if seen[addr] {
			t.Fatalf("freePort gave %s twice", addr)
		}
		seen[addr] = true
	}
}
