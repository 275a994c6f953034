// Package bench is batchhook's load generator and its baseline: Run sends
// signed batch.completed notifications at a given concurrency and reports
// throughput and ack latency per outcome; Bare is the baseline server, an
// echo handler that verifies the signature and answers 200 without storing
// anything, so that the daemon's cost can be stated as a ratio to it on the
// same machine with the same load.
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
)

// Options configures a run. It stops at Count requests or after Duration,
// whichever comes first; at least one must be set.
type Options struct {
	URL         string
	Secret      []byte
	Concurrency int
	Count       int
	Duration    time.Duration
	// InvalidShare and ReplayShare (0 to 1) are the parts of requests sent
	// with a forged signature, or replaying an id already sent.
	InvalidShare, ReplayShare float64
	// AllowRemote lets the target be outside loopback.
	AllowRemote bool
	// Progress, when set, is called about once a second with requests done.
	Progress func(done int64, elapsed time.Duration)
}

// Outcome is the figures of one kind of reply.
type Outcome struct {
	Requests int           `json:"requests"`
	P50      time.Duration `json:"p50_ns"`
	P95      time.Duration `json:"p95_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
}

// Result is a run's figures.
type Result struct {
	Requests   int                `json:"requests"`
	Errors     int                `json:"errors"`
	Elapsed    time.Duration      `json:"elapsed_ns"`
	PerSecond  float64            `json:"per_second"`
	All        Outcome            `json:"all"`
	ByOutcome  map[string]Outcome `json:"by_outcome"`
	Concurrent int                `json:"concurrency"`
}

// Run sends the load and returns its figures.
func Run(ctx context.Context, o Options) (*Result, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bench: bad URL %q", o.URL)
	}
	if !o.AllowRemote {
		if err := resolvesToLoopback(ctx, u.Hostname()); err != nil {
			return nil, err
		}
	}
	if o.Concurrency < 1 || (o.Count < 1 && o.Duration <= 0) {
		return nil, errors.New("bench: concurrency ≥ 1 and a count or a duration are required")
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	transport := &http.Transport{MaxIdleConnsPerHost: o.Concurrency}
	if !o.AllowRemote {
		// The name may resolve elsewhere by the time a connection is
		// made: every dial is checked on the address it connects to.
		transport.DialContext = (&net.Dialer{Control: dialLoopbackOnly}).DialContext
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: transport}
	run := fmt.Sprintf("bench_%x", rand.Uint64())
	var (
		next    atomic.Int64
		unique  atomic.Int64 // ids sent so far; replays draw from them
		mu      sync.Mutex
		samples = map[string][]time.Duration{}
		errs    int
		wg      sync.WaitGroup
	)
	start := time.Now()
	stopProgress := make(chan struct{})
	if o.Progress != nil {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					o.Progress(next.Load(), time.Since(start))
				}
			}
		}()
	}
	for w := 0; w < o.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if o.Count > 0 && i > int64(o.Count) {
					return
				}
				outcome, took, err := send(ctx, client, o, run, &unique)
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						errs++
					}
				} else {
					samples[outcome] = append(samples[outcome], took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	res := &Result{Elapsed: time.Since(start), Errors: errs, ByOutcome: map[string]Outcome{}, Concurrent: o.Concurrency}
	var all []time.Duration
	for k, v := range samples {
		res.ByOutcome[k] = summarise(v)
		all = append(all, v...)
	}
	res.All = summarise(all)
	res.Requests = len(all)
	res.PerSecond = float64(res.Requests) / res.Elapsed.Seconds()
	return res, nil
}

// send makes one request: forged, a replay of an id already sent, or a new
// unique id.
func send(ctx context.Context, c *http.Client, o Options, run string, unique *atomic.Int64) (string, time.Duration, error) {
	forged := false
	var n int64
	switch r := rand.Float64(); {
	case r < o.InvalidShare:
		forged = true
		n = 1 + rand.Int64N(1<<40)
	case r < o.InvalidShare+o.ReplayShare && unique.Load() > 0:
		n = 1 + rand.Int64N(unique.Load())
	default:
		n = unique.Add(1)
	}
	id := fmt.Sprintf("%s_%d", run, n)
	body := []byte(fmt.Sprintf(`{"event":"batch.completed","batch_id":%q,"status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":%q}`,
		id, time.Now().UTC().Format(time.RFC3339)))
	sig := signature.Sign(o.Secret, body)
	if forged {
		sig = signature.Sign([]byte("forged"), body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, sig)
	req.Header.Set("X-Service-Attempt", "1")
	t := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	took := time.Since(t)
	outcome := fmt.Sprint(resp.StatusCode)
	for _, r := range []string{"accepted", "duplicate", "ignored"} {
		if bytes.Contains(reply, []byte(`"`+r+`"`)) {
			outcome = r
		}
	}
	if resp.StatusCode == http.StatusUnauthorized {
		outcome = "unauthorized"
	}
	return outcome, took, nil
}

func summarise(d []time.Duration) Outcome {
	if len(d) == 0 {
		return Outcome{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return Outcome{Requests: len(d), P50: at(.50), P95: at(.95), P99: at(.99), Max: d[len(d)-1]}
}

// resolvesToLoopback refuses a target host unless every address it
// resolves to is a loopback address. A name is never trusted as such:
// "localhost" can resolve anywhere.
func resolvesToLoopback(ctx context.Context, host string) error {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("bench: resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("bench: %s resolves to %s, not a loopback address; pass --allow-remote to load another host", host, ip.Unmap())
		}
	}
	return nil
}

// dialLoopbackOnly is a net.Dialer Control: it refuses to connect to an
// address that is not loopback (the address after resolution).
func dialLoopbackOnly(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("bench: dial %s: %w", address, err)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("bench: %s is not a loopback address; pass --allow-remote to load another host", host)
	}
	return nil
}
