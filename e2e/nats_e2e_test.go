package e2e

// End-to-end tests of the nats sink: the real binary, the
// provider simulator, and a real nats-server with JetStream embedded in
// the test process.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
)

const e2eSubject = "batchhook.results"

// natsServer runs nats-server with JetStream on a temp dir, on a random
// loopback port.
func natsServer(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func natsJS(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// ackGate is a TCP proxy to the server whose server-to-client direction
// can be frozen: with it frozen, the daemon's publishes reach the stream
// but their acks do not come back, so the daemon waits mid-delivery.
type ackGate struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newAckGate(t *testing.T, target string) *ackGate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &ackGate{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, c, s)
			g.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					for g.frozen.Load() {
						time.Sleep(5 * time.Millisecond)
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		g.frozen.Store(false)
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, c := range g.conns {
			c.Close()
		}
	})
	return g
}

func (g *ackGate) url() string { return "nats://" + g.ln.Addr().String() }

// TestNATSSinkSIGKILLMidDelivery: the acks are held back once 150
// messages reached the subject, the daemon is killed while it waits, and a
// new one (straight to the server) finishes. After the stream's dedup each
// batch is there once: every item in order, byte-equal to the export,
// then its manifest.
func TestNATSSinkSIGKILLMidDelivery(t *testing.T) {
	t.Parallel()
	srv := natsServer(t)
	nc, js := natsJS(t, srv.ClientURL())
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "RESULTS", Subjects: []string{e2eSubject},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gate := newAckGate(t, srv.Addr().String())
	var seen atomic.Int64
	frozen := make(chan struct{})
	sub, err := nc.Subscribe(e2eSubject, func(*nats.Msg) {
		if seen.Add(1) == 150 {
			gate.frozen.Store(true)
			close(frozen)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_SINKS"] = "file,nats"
	s.env["BATCHHOOK_NATS_URL"] = gate.url()
	s.env["BATCHHOOK_NATS_PUBLISH_TIMEOUT"] = "5s"
	s.env["BATCHHOOK_PAGE_LIMIT"] = "250"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	d := startDaemon(t, s.addr, s.env)
	var ids []string
	for i, n := range []int{1000, 37} {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(n, int64(300+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	select {
	case <-frozen:
	case <-time.After(waitBound):
		t.Fatalf("150 messages never reached the subject:\n%s", d.out.String())
	}
	time.Sleep(50 * time.Millisecond) // the daemon now waits for an ack that is held back
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	d.done <- nil
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs >= 1000+1+37+1 {
		t.Fatalf("the stream already held all %d messages at the kill: the kill was not mid-delivery", info.State.Msgs)
	}
	t.Logf("stored at the kill: %d messages", info.State.Msgs)

	s.env["BATCHHOOK_NATS_URL"] = srv.ClientURL()
	d2 := startDaemon(t, s.addr, s.env)
	for _, id := range ids {
		waitDelivered(t, d2, id, "nats", waitBound)
	}
	msgs := streamMessages(t, st)
	for _, id := range ids {
		checkNATSBatch(t, s, msgs, id)
	}
	if want := 1000 + 1 + 37 + 1; len(msgs) != want {
		t.Fatalf("the stream holds %d messages, want %d (one per item and one manifest per batch)", len(msgs), want)
	}
	t.Logf("published %d messages for %d stored: %d duplicates dropped by the stream's window", seen.Load(), len(msgs), seen.Load()-int64(len(msgs)))
	d2.stop(t)
	if strings.Contains(d2.out.String(), lookupsim.SampleCPFs(1000, 300)[0]) { // the whole log, the daemon gone
		t.Fatal("the logs hold a CPF")
	}
}

// streamMessages reads every message of the stream in order.
func streamMessages(t *testing.T, st jetstream.Stream) []*jetstream.RawStreamMsg {
	t.Helper()
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}

// checkNATSBatch: the batch's messages are its items 0..n-1 in order,
// each once with its headers, byte-equal to results.ndjson (itself equal
// to what the simulator served), then its manifest once, equal to
// manifest.json.
func checkNATSBatch(t *testing.T, s *setup, msgs []*jetstream.RawStreamMsg, id string) {
	t.Helper()
	results := s.checkExport(t, id)
	manifest, err := os.ReadFile(filepath.Join(s.exports, id, export.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := natsBatchErr(msgs, id, results, manifest); err != nil {
		t.Fatal(err)
	}
}

// natsBatchErr is checkNATSBatch's comparison, as an error (the soak
// counts them): results and manifest are the export's files.
func natsBatchErr(msgs []*jetstream.RawStreamMsg, id string, results, manifest []byte) error {
	lines := bytes.SplitAfter(results, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last "\n"
	next, manifests := 0, 0
	for _, m := range msgs {
		if m.Header.Get("Batchhook-Batch-Id") != id {
			continue
		}
		if manifests > 0 {
			return fmt.Errorf("batch %s: a message after its manifest", id)
		}
		switch kind := m.Header.Get("Batchhook-Kind"); kind {
		case "item":
			if next >= len(lines) || m.Header.Get("Batchhook-Index") != strconv.Itoa(next) || m.Header.Get("Nats-Msg-Id") != id+":"+strconv.Itoa(next) {
				return fmt.Errorf("batch %s: item message %q (index %q) where item %d of %d was due", id, m.Header.Get("Nats-Msg-Id"), m.Header.Get("Batchhook-Index"), next, len(lines))
			}
			if !bytes.Equal(append(m.Data, '\n'), lines[next]) {
				return fmt.Errorf("batch %s: item %d differs from line %d of results.ndjson", id, next, next)
			}
			next++
		case "manifest":
			if m.Header.Get("Nats-Msg-Id") != id+":manifest" || !bytes.Equal(m.Data, manifest) {
				return fmt.Errorf("batch %s: manifest message %q differs from manifest.json", id, m.Header.Get("Nats-Msg-Id"))
			}
			manifests++
		default:
			return fmt.Errorf("batch %s: Batchhook-Kind %q", id, kind)
		}
	}
	if next != len(lines) || manifests != 1 {
		return fmt.Errorf("batch %s: %d items and %d manifests in the stream, want %d and 1", id, next, manifests, len(lines))
	}
	return nil
}

// TestNATSSinkStartChecksTheStream: a reachable server without a stream
// for the subject stops the start with exit 2 and a line naming the
// subject; an unreachable one does not stop it.
func TestNATSSinkStartChecksTheStream(t *testing.T) {
	t.Parallel()
	srv := natsServer(t)
	code, stderr, stdout := runServe(t, []string{binary, "serve"}, map[string]string{
		"BATCHHOOK_SINKS": "file,nats", "BATCHHOOK_NATS_URL": srv.ClientURL(), "BATCHHOOK_NATS_SUBJECT": "acme.lookups"})
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "acme.lookups") ||
		!strings.Contains(stderr, "BATCHHOOK_NATS_SUBJECT") {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming the subject\n%s", code, stderr, stdout)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "nats://" + ln.Addr().String()
	ln.Close()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_SINKS"] = "file,nats"
	s.env["BATCHHOOK_NATS_URL"] = down
	s.env["BATCHHOOK_NATS_PUBLISH_TIMEOUT"] = "1s"
	d := startDaemon(t, s.addr, s.env)
	if !strings.Contains(d.out.String(), `"event":"nats_unreachable"`) {
		t.Fatalf("no nats_unreachable warning:\n%s", d.out.String())
	}
	d.stop(t)
}
