package bench

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRunAgainstTheBareBaseline(t *testing.T) {
	srv := httptest.NewServer(Bare([]byte("s"), "/hook", 65536))
	defer srv.Close()
	res, err := Run(context.Background(), Options{URL: srv.URL + "/hook", Secret: []byte("s"), Concurrency: 4, Count: 200, InvalidShare: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	acc, unauth := res.ByOutcome["accepted"].Requests, res.ByOutcome["unauthorized"].Requests
	if res.Requests != 200 || res.Errors != 0 || acc+unauth != 200 || unauth < 20 || unauth > 90 {
		t.Fatalf("result %+v; want 200 requests, about a quarter forged", res)
	}
	if o := res.All; o.P50 <= 0 || o.P50 > o.P99 || o.P99 > o.Max {
		t.Fatalf("percentiles out of order: %+v", o)
	}
}

func TestRefusesRemoteTargetsAndNeedsABound(t *testing.T) {
	_, err := Run(context.Background(), Options{URL: "http://192.0.2.1/hook", Secret: []byte("s"), Concurrency: 1, Count: 1})
	if err == nil || !strings.Contains(err.Error(), "allow-remote") {
		t.Fatalf("remote target: %v", err)
	}
	if _, err := Run(context.Background(), Options{URL: "http://127.0.0.1:1/hook", Concurrency: 1}); err == nil {
		t.Fatal("a run with neither count nor duration was accepted")
	}
	start := time.Now()
	res, err := Run(context.Background(), Options{URL: "http://127.0.0.1:1/hook", Secret: []byte("s"), Concurrency: 2, Duration: 300 * time.Millisecond})
	if err != nil || time.Since(start) > 5*time.Second || res.Requests != 0 || res.Errors == 0 {
		t.Fatalf("a run against a closed port: %+v %v after %s", res, err, time.Since(start))
	}
}

// TestDialsOnlyLoopback: without AllowRemote every connection is checked on
// the address it goes to, after resolution, not on the name in the URL.
func TestDialsOnlyLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:80": true, "127.1.2.3:80": true,
		"0.0.0.0:80": false, "[::]:80": false, "192.0.2.1:80": false, "[2001:db8::1]:80": false,
	} {
		if err := dialLoopbackOnly("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("dial %s: %v", addr, err)
		}
	}
	if err := resolvesToLoopback(context.Background(), "localhost"); err != nil {
		t.Errorf("localhost on this machine: %v", err)
	}
	if err := resolvesToLoopback(context.Background(), "0.0.0.0"); err == nil {
		t.Error("0.0.0.0 (every interface) taken as loopback")
	}
}
