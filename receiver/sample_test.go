package receiver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
)

type dropCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *dropCounter) drop(event string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n[event]++
}

func (d *dropCounter) get(event string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[event]
}

// Every line a stranger can cause (forged signature, body over the cap,
// body never finished) goes through one sampled budget, and every line
// dropped is counted by event (unsampled, 20,000 aborted bodies once
// wrote 20,000 lines).
func TestStrangerLinesAreSampledAndDropsCounted(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logs := &testutil.SyncBuffer{}
	drops := &dropCounter{n: map[string]int{}}
	const burst = 5
	srv, err := New(Options{
		Path: testPath, MaxBodyBytes: 4096, Secret: func() []byte { return []byte(testSecret) },
		Store: st, Logger: zerolog.New(logs), RejectBurst: burst, LogDropped: drops.drop,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	addr := ln.Addr().String()

	const each = 30
	start := time.Now()
	b := body("b_stranger", "completed")
	for i := 0; i < each; i++ {
		// A forged signature: 401.
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+testPath, bytes.NewReader(b))
		req.Header.Set(signature.Header, "forged")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
			t.Fatalf("forged: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		// A body over the cap: 413.
		big := bytes.Repeat([]byte{'x'}, 5000)
		if resp, err := http.Post("http://"+addr+testPath, "application/json", bytes.NewReader(big)); err != nil || resp.StatusCode != 413 {
			t.Fatalf("too large: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		// A body the sender abandons half-way: closed without a reply.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"event\":", testPath)
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if reply, err := io.ReadAll(conn); err != nil || len(reply) != 0 {
			t.Fatalf("aborted body: reply %q, %v; want the connection closed without one", reply, err)
		}
		conn.Close()
	}
	elapsed := time.Since(start)
	allowed := burst * (int(elapsed/time.Second) + 1)
	out := logs.String()
	total := 0
	for _, event := range []string{eventRejected, eventTooLarge, eventReadFailed} {
		lines := strings.Count(out, `"event":"`+event+`"`)
		total += lines
		if lines+drops.get(event) != each {
			t.Errorf("%s: %d lines written + %d counted as dropped, want %d", event, lines, drops.get(event), each)
		}
	}
	if total == 0 || total > allowed {
		t.Errorf("%d stranger lines in %s for %d requests; want 1..%d (a burst of %d a second, shared)", total, elapsed, 3*each, allowed, burst)
	}
}
