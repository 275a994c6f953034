package httpserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
)

// exchangeWait bounds one raw exchange; a refused request is answered and
// closed at once, so only a connection kept open waits this long.
const exchangeWait = 10 * time.Second

// framingServer serves, through Server, a handler that answers 200 with
// the length of the body it read, and records each refusal's peer.
type framingServer struct {
	addr    string
	mu      sync.Mutex
	refused []string
	served  int
}

func startFramingServer(t *testing.T) *framingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &framingServer{addr: ln.Addr().String()}
	srv := New("test listener", &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			fs.mu.Lock()
			fs.served++
			fs.mu.Unlock()
			if err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%d", len(body))
		}),
		ReadHeaderTimeout: 10 * time.Second, DisableGeneralOptionsHandler: true,
	}, func(remote string) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.refused = append(fs.refused, remote)
	})
	srv.Serve(LimitListener(ln, 64))
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return fs
}

func (fs *framingServer) counts() (served int, refused []string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.served, append([]string(nil), fs.refused...)
}

// Each spelling of both fields is answered 400, the connection is closed,
// the handler never runs and the hidden request is never answered; each
// refusal is reported once, with the peer's address.
func TestBothLengthHeadersAreRefused(t *testing.T) {
	fs := startFramingServer(t)
	hidden := "GET /hidden HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	variants := append(testutil.Smuggling("/w", hidden), testutil.MoreSmuggling("/w", hidden)...)
	for _, v := range variants {
		x, err := testutil.Send(fs.addr, v.Bytes, exchangeWait)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if why := x.Refused(); why != "" {
			t.Errorf("%s: %s", v.Name, why)
		}
	}
	served, refused := fs.counts()
	if served != 0 {
		t.Errorf("the handler ran %d times", served)
	}
	if len(refused) != len(variants) {
		t.Errorf("%d refusals reported for %d refused requests", len(refused), len(variants))
	}
	for _, r := range refused {
		if !strings.HasPrefix(r, "127.0.0.1:") {
			t.Errorf("refusal reported for %q, want the peer's address", r)
		}
	}
}

// Transfer-Encoding before HTTP/1.1, alone: net/http ignores it (no body,
// the connection kept if asked), a proxy may read a chunked body, so its
// body would be read as a request. It is refused the same way.
func TestCodingBeforeHTTP11IsRefused(t *testing.T) {
	fs := startFramingServer(t)
	raw := "POST /w HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"GET /hidden HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	x, err := testutil.Send(fs.addr, raw, exchangeWait)
	if err != nil {
		t.Fatal(err)
	}
	if why := x.Refused(); why != "" {
		t.Fatal(why)
	}
}

// The same request sent a byte a write: the header block reaches the
// server in as many reads as the network makes of it.
func TestBothLengthHeadersAreRefusedOverManyReads(t *testing.T) {
	fs := startFramingServer(t)
	raw := testutil.Smuggling("/w", "GET /hidden HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")[0].Bytes
	c, err := net.Dial("tcp", fs.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(exchangeWait))
	for i := 0; i < len(raw); i++ {
		if _, err := c.Write([]byte{raw[i]}); err != nil {
			break // the server closed after its 400
		}
	}
	got, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(got), "HTTP/1.1 400 ") || strings.Count(string(got), "HTTP/1.1 ") != 1 {
		t.Fatalf("read %q, want one 400 and the close", got)
	}
}

// A client that waits for 100 Continue before its body gets the 400
// instead, at once.
func TestBothLengthHeadersWithExpectGetNoContinue(t *testing.T) {
	fs := startFramingServer(t)
	c, err := net.Dial("tcp", fs.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(exchangeWait))
	io.WriteString(c, "POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		t.Fatalf("read %q (%v), want a 400 and the close", got, err)
	}
}

// The control: requests of each framing, pipelined on one connection,
// are each served with the body net/http read, so the check finds each
// header block where net/http does.
func TestPipelinedRequestsAreServed(t *testing.T) {
	fs := startFramingServer(t)
	raw := "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nTrailer-A: b\r\n\r\n" +
		"\r\n" + // net/http skips a CRLF after a POST
		"POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nContent-Le" +
		"GET /c HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nxy" +
		"POST /d HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /e HTTP/1.1\nHost: h\nConnection: close\n\n"
	x, err := testutil.Send(fs.addr, raw, exchangeWait)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(x.Statuses) != "[200 200 200 200 200]" || !x.Closed {
		t.Fatalf("answered %v (closed %v, %v), want five 200s and the close asked for", x.Statuses, x.Closed, x.Err)
	}
	if served, refused := fs.counts(); served != 5 || len(refused) != 0 {
		t.Fatalf("served %d, refused %v", served, refused)
	}
}

// A good request pipelined before a refused one may be served; the
// refused one is answered 400 and nothing after it.
func TestRequestBeforeARefusedOneIsServedAtMost(t *testing.T) {
	fs := startFramingServer(t)
	hidden := "GET /hidden HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	raw := "GET /first HTTP/1.1\r\nHost: h\r\n\r\n" + testutil.Smuggling("/w", hidden)[1].Bytes
	x, err := testutil.Send(fs.addr, raw, exchangeWait)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprint(x.Statuses)
	if (s != "[200 400]" && s != "[400]") || !x.Closed {
		t.Fatalf("answered %v (closed %v, %v), want at most a 200, then a 400 and the close", x.Statuses, x.Closed, x.Err)
	}
}

// The connections keep what the receiver relies on: the socket, to wait
// on it for a body (waitArrived), and net/http's half-close.
func TestFramingConnKeepsTheSocket(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := refuseAmbiguous(LimitListener(inner, 1), nil)
	defer ln.Close()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	sc, ok := got.(syscall.Conn)
	if !ok {
		t.Fatal("the connection has no SyscallConn")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatalf("SyscallConn: %v", err)
	}
	cw, ok := got.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(exchangeWait))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after CloseWrite the client read %d, %v; want EOF", n, err)
	}
}

// The check's memory is its type's: no pointer, slice, map or string that
// could grow, and following a megabyte of header line, chunk extension or
// body allocates nothing.
func TestFramingHoldsNoBuffer(t *testing.T) {
	var check func(reflect.Type)
	check = func(ty reflect.Type) {
		switch ty.Kind() {
		case reflect.Struct:
			for i := 0; i < ty.NumField(); i++ {
				check(ty.Field(i).Type)
			}
		case reflect.Array:
			check(ty.Elem())
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.String, reflect.Interface, reflect.Chan, reflect.Func:
			t.Errorf("framing holds a %s", ty)
		}
	}
	check(reflect.TypeOf(framing{}))
	long := strings.Repeat("a", 1<<20)
	for name, stream := range map[string]string{
		"header line":     "GET / HTTP/1.1\r\nX-Long: " + long,
		"long name":       "GET / HTTP/1.1\r\n" + long,
		"chunk extension": "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + long,
		"body":            "POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n" + long,
		"request line":    "GET /" + long,
	} {
		p := []byte(stream)
		if a := testing.AllocsPerRun(3, func() {
			var f framing
			for i := 0; i < len(p); i += 4096 {
				f.feed(p[i:min(i+4096, len(p))])
			}
		}); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}
