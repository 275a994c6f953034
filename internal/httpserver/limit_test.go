package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Beyond the cap a new connection is not served until a held one closes;
// then it is.
func TestLimitListenerHoldsConnectionsBeyondTheCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New("test listener", &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 10 * time.Second,
	}, nil)
	srv.Serve(LimitListener(ln, 2))
	defer srv.Shutdown(context.Background())
	addr := ln.Addr().String()

	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	served := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		served <- err
	}()
	select {
	case err := <-served:
		t.Fatalf("a third connection was served while two held the cap (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("after a slot freed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not served after a slot freed")
	}
}

// Closing the listener ends an Accept that waits for a slot.
func TestLimitListenerCloseEndsAWaitingAccept(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 1)
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	done := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Accept returned a connection after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}
