package receiver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/store"
)

// startBig serves with a 64 KiB body cap (the default) and returns the
// address and the store.
func startBig(t *testing.T, limits Limits) (string, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := New(Options{
		Path: testPath, MaxBodyBytes: 64 << 10, Secret: func() []byte { return []byte(testSecret) },
		Store: st, Logger: zerolog.New(&testutil.SyncBuffer{}), Limits: limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return ln.Addr().String(), st
}

// paddedBody is a valid notification of about size bytes.
func paddedBody(id string, size int) []byte {
	b := body(id, "completed")
	pad := size - len(b) - len(`,"pad":""`)
	return append(b[:len(b)-1], []byte(`,"pad":"`+strings.Repeat("p", max(pad, 0))+`"}`)...)
}

func rawRequest(addr string, b []byte, sig string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		testPath, addr, signature.Header, sig, len(b))
}

// A genuine body that arrives in pieces, with pauses, is read whole once
// the last piece is in, and recorded byte for byte.
func TestDribbledBodyIsRecordedWhole(t *testing.T) {
	addr, st := startBig(t, Limits{})
	b := paddedBody("b_dribbled", 40<<10)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg := append([]byte(rawRequest(addr, b, signature.Sign([]byte(testSecret), b))), b...)
	for _, cut := range [][2]int{{0, 300}, {300, 5000}, {5000, 30000}, {30000, len(msg)}} {
		if _, err := conn.Write(msg[cut[0]:cut[1]]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(reply, []byte(ResultAccepted)) {
		t.Fatalf("dribbled delivery: %d %s", resp.StatusCode, reply)
	}
	got, err := st.Get("b_dribbled")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Notification.Raw, b) {
		t.Fatalf("recorded body differs from the one sent (%d bytes, want %d)", len(got.Notification.Raw), len(b))
	}
}

// A sender that gives up half-way is let go at once, not at the read
// timeout, and without a reply: there is no one to read it, and writing
// one would only touch the connection's write buffer.
func TestSenderGoneMidBodyIsNotWaitedOn(t *testing.T) {
	addr, _ := startBig(t, Limits{ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10})
	b := paddedBody("b_gone", 30<<10)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(append([]byte(rawRequest(addr, b, "forged")), b[:20000]...)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the handler reach its wait
	start := time.Now()
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(8 * time.Second))
	reply, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("connection not closed after the sender half-closed: %v", err)
	}
	if len(reply) != 0 {
		t.Fatalf("a reply to a sender that left: %q", reply)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("closed %s after the sender left; the wait must end when the peer closes", took)
	}
}

// Bodies of unknown length (chunked) are read through a bounded path and
// capped like the others.
func TestChunkedBodies(t *testing.T) {
	addr, st := startBig(t, Limits{})
	post := func(b []byte) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+testPath, io.MultiReader(bytes.NewReader(b)))
		req.ContentLength = -1 // chunked
		req.Header.Set(signature.Header, signature.Sign([]byte(testSecret), b))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	b := paddedBody("b_chunked", 10<<10)
	if code := post(b); code != http.StatusOK {
		t.Fatalf("chunked genuine delivery: %d", code)
	}
	if got, err := st.Get("b_chunked"); err != nil || !bytes.Equal(got.Notification.Raw, b) {
		t.Fatalf("chunked body not recorded as sent: %v", err)
	}
	if code := post(paddedBody("b_chunked_big", 64<<10+1)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body over the cap: %d, want 413", code)
	}
}

// Buffers are reused across requests: concurrent deliveries of different
// sizes, genuine and forged, must each be recorded exactly as sent.
func TestPooledBuffersKeepEveryBodyIntact(t *testing.T) {
	addr, st := startBig(t, Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("b_pool_%d", i)
			b := paddedBody(id, 300+i*997)
			sig := signature.Sign([]byte(testSecret), b)
			if i%3 == 0 {
				sig = "forged"
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+testPath, bytes.NewReader(b))
			req.Header.Set(signature.Header, sig)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if want := map[bool]int{true: 401, false: 200}[i%3 == 0]; resp.StatusCode != want {
				errs <- fmt.Errorf("%s: %d, want %d", id, resp.StatusCode, want)
				return
			}
			if i%3 == 0 {
				return
			}
			got, err := st.Get(id)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got.Notification.Raw, b) {
				errs <- fmt.Errorf("%s recorded with a body that differs from the one sent", id)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A stalled sender costs the connection's state, not a body buffer: the
// heap grows by far less per stalled connection than the 64 KiB body it
// declared (~160 KiB each before bodies were left in the kernel).
func TestStalledBodiesHoldNoBodyBuffer(t *testing.T) {
	addr, _ := startBig(t, Limits{})
	b := bytes.Repeat([]byte{'x'}, 64<<10)
	head := rawRequest(addr, b, "forged")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc + ms.StackInuse
	const n = 200
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write(append([]byte(head), b[:60_000]...)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // let every handler reach its wait
	runtime.GC()                       // what is left is what the stalled requests hold
	runtime.ReadMemStats(&ms)
	per := (int64(ms.HeapAlloc+ms.StackInuse) - int64(before)) / n
	t.Logf("%d stalled 64 KiB bodies: %d KiB of heap and stack each (server and client)", n, per>>10)
	if per > 40<<10 {
		t.Fatalf("each stalled body costs %d KiB; a body buffer is being held (want < 40 KiB)", per>>10)
	}
}

// A sender that asks "Expect: 100-continue" gets the 100 before it sends
// the body (the first read sends it), and then its answer.
func TestExpectContinue(t *testing.T) {
	addr, _ := startBig(t, Limits{})
	b := paddedBody("b_continue", 20<<10)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := strings.Replace(rawRequest(addr, b, signature.Sign([]byte(testSecret), b)), "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1)
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("before the body: %q, %v; want 100 Continue", line, err)
	}
	if _, err := r.ReadString('\n'); err != nil { // the blank line after it
		t.Fatal(err)
	}
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(reply, []byte(ResultAccepted)) {
		t.Fatalf("after 100-continue: %d %s", resp.StatusCode, reply)
	}
}
