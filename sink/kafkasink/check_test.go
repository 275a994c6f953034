package kafkasink

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestCheckReachesTheBrokers: Check answers nil for a running cluster and
// an error, well before its deadline, for a closed loopback port.
func TestCheckReachesTheBrokers(t *testing.T) {
	c := newCluster(t, 1)
	s := newTestSink(t, c.ListenAddrs(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check on a running cluster: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	down := newTestSink(t, []string{closed}, Options{})
	if err := down.Check(ctx); err == nil {
		t.Fatal("Check on a closed port: nil")
	} else if ctx.Err() != nil {
		t.Fatalf("Check on a closed port waited for the deadline: %v", err)
	}
}
