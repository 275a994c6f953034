package natssink_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/natssink"
)

// packagedServer is where Debian's nats-server package puts the binary;
// /usr/sbin is not on every user's PATH.
const packagedServer = "/usr/sbin/nats-server"

// TestDeliverToThePackagedServer runs the sink against the nats-server an
// operator installs (Debian's package), not only the library version
// embedded in the other tests: a delivery's messages must land in a stream
// of that server. Skipped when the binary is not installed.
func TestDeliverToThePackagedServer(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat(packagedServer); serr != nil {
			t.Skipf("nats-server is not installed (not on PATH, no %s): apt-get install nats-server to run this test", packagedServer)
		}
		bin = packagedServer
	}
	url := startPackagedServer(t, bin)
	st := addStream(t, url, natssink.DefaultSubject, time.Minute)
	s := newSink(t, url, 5*time.Second)
	items := cpfItems(30)
	e := writeExport(t, "pkg1", items, 0)
	if res := s.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver to %s = %+v", bin, res)
	}
	msgs := readStream(t, st)
	if len(msgs) != len(items)+1 {
		t.Fatalf("the stream holds %d messages, want %d", len(msgs), len(items)+1)
	}
	for i, m := range msgs[:len(items)] {
		if m.id != "pkg1:"+strconv.Itoa(i) || m.kind != "item" || string(m.data) != items[i] {
			t.Fatalf("message %d: id %q kind %q, or not line %d", i, m.id, m.kind, i)
		}
	}
	if last := msgs[len(items)]; last.id != "pkg1:manifest" || last.kind != "manifest" {
		t.Fatalf("last message: id %q kind %q, want the manifest", last.id, last.kind)
	}
}

// startPackagedServer starts bin with JetStream on a free loopback port
// and a store in a temp dir, waits until the port accepts connections, and
// kills that process (and only it) when the test ends. It returns the
// client URL.
func startPackagedServer(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // the server binds it next; nothing else on loopback races for a kernel-chosen port
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", port, "-sd", t.TempDir())
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("kill nats-server: %v", err)
		}
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", port)
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "nats://" + addr
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("%s exited before listening: %v\n%s", bin, err, out.String())
		case <-deadline:
			t.Fatalf("%s did not listen on %s within 20 s:\n%s", bin, addr, out.String())
		case <-tick.C:
		}
	}
}
