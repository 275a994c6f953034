package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
	"github.com/batchhook/batchhook/internal/signature"
)

// The guard's databases and rounds. The large one is a year at about
// 550 batches a day, its payments log thin (ciPaymentsPerMinute), so that
// the build is the batches' records, indexes and deliveries. The small one
// is the same shape at smallBatches: as good as empty, but its pages are
// as full as the large one's (50 exported batches of 82, the 3 queued, no
// failed delivery in either), so the two differ in size alone; against an
// empty database a page of 50 exported batches (10 ms to encode under
// -race, 0.4 ms for an empty page) would read as growth.
const (
	ciBatches           = 200_000
	smallBatches        = 1_000
	ciPaymentsPerMinute = 0.05
	ciRounds            = 5  // starts of each database
	ciListsPerRound     = 6  // requests of each list a round
	ciAcksPerRound      = 20 // acknowledged notifications a round
	ciPasses            = 3  // passes a failing figure is measured in before it fails the guard
)

// The rule: a figure of the large database fails the guard when its
// median is more than growthLimit times the small one's and more than
// slack above it. The slack keeps a figure of a few milliseconds (a list
// page, an ack's fsync) from failing on a hiccup of a loaded machine; a
// figure that grows with size (a start or a page that reads every record)
// grows by far more.
const (
	growthLimit = 2
	slack       = 2 * time.Millisecond
)

// ciSecret and ciToken are the guard's daemons' signing secret and admin
// token.
const (
	ciSecret = "scale-ci-signing-secret"
	ciToken  = "scale-ci-admin-token"
)

// TestFiguresDoNotGrowWithSize is the short form of docs/performance.md's
// "A year of traffic", run by the suite: the figures that must not grow
// with the database's size (a start until /readyz, a page of a list, an
// acknowledged notification's commit) on a year of ciBatches batches
// against the same shape at smallBatches, in a daemon started in process.
//
// Against noise, a figure is the median of its samples, and the two
// databases are measured in turns: each round starts both (which first
// alternates), then sends each list request and each notification to one
// and the other, alternating which goes first, so that a load spike on
// the machine falls on both. The slack (above) forgives a difference of a
// couple of milliseconds. Every figure is logged, with its spread.
func TestFiguresDoNotGrowWithSize(t *testing.T) {
	started := time.Now()
	bin := filepath.Join(t.TempDir(), "scale")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sizes := [2]int{smallBatches, ciBatches}
	dirs := [2]string{ciDatabase(t, bin, sizes[0]), ciDatabase(t, bin, sizes[1])}
	t.Logf("built in %s (go build included)", time.Since(started).Round(100*time.Millisecond))
	// A figure fails only when it fails in every pass: a load spike on a
	// shared machine can double one pass's median, but a figure that
	// grows with size (a start or a page that reads every record) grows
	// by far more, and in every pass.
	failing := map[string]bool{}
	for pass := 1; pass <= ciPasses; pass++ {
		measuring := time.Now()
		figs, names := measureCI(t, dirs, sizes)
		over := map[string]bool{}
		for _, name := range names {
			small, large := figs[name][0], figs[name][1]
			s, l := median(small), median(large)
			t.Logf("pass %d: %-41s %d batches %9s (%s), %d batches %9s (%s): %.2f×", pass, name,
				smallBatches, s, spread(small), ciBatches, l, spread(large), float64(l)/float64(s))
			if l > growthLimit*s && l-s > slack && (pass == 1 || failing[name]) {
				over[name] = true
				failing[name] = true
			}
		}
		t.Logf("pass %d measured in %s (%d samples of each start, %d of each list, %d acks)", pass, time.Since(measuring).Round(100*time.Millisecond),
			ciRounds, ciRounds*ciListsPerRound, ciRounds*ciAcksPerRound)
		if len(over) == 0 {
			return
		}
		failing = over
	}
	for name := range failing {
		t.Errorf("%s: its median on %d batches was more than %d× the one on %d (and %s above it) in each of %d passes: grows with the database's size",
			name, ciBatches, growthLimit, smallBatches, slack, ciPasses)
	}
}

// measureCI measures each figure on both databases, ciRounds starts of
// each, in turns (TestFiguresDoNotGrowWithSize), and returns the samples
// by figure, [0] the small database's and [1] the large one's, with the
// figures' names in the order first measured.
func measureCI(t *testing.T, dirs [2]string, sizes [2]int) (map[string]*[2][]time.Duration, []string) {
	t.Helper()
	figs := map[string]*[2][]time.Duration{}
	var names []string
	add := func(name string, side int, d time.Duration) {
		if figs[name] == nil {
			figs[name] = new([2][]time.Duration)
			names = append(names, name)
		}
		figs[name][side] = append(figs[name][side], d)
	}
	lists := []string{
		"/admin/batches?state=queued&limit=50",
		"/admin/batches?state=exported&limit=50",
		"/admin/deliveries?state=failed&limit=50",
	}
	turn := 0
	sides := func() [2]int { // 0 then 1, then 1 then 0
		turn++
		return [2]int{turn % 2, (turn + 1) % 2}
	}
	for range ciRounds {
		var ds [2]*ciDaemon
		for _, side := range sides() {
			ds[side] = startCI(t, dirs[side], sizes[side])
			add("start until /readyz", side, ds[side].ready)
		}
		for range ciListsPerRound {
			for _, path := range lists {
				for _, side := range sides() {
					add("GET "+path, side, ds[side].get(t, path))
				}
			}
		}
		for range ciAcksPerRound {
			for _, side := range sides() {
				add("ack of a new batch", side, ds[side].ack(t))
			}
		}
		for _, d := range ds {
			d.stop(t)
		}
	}
	return figs, names
}

// ciDatabase builds a year of n batches with the scale command bin in a
// new directory and returns its data directory. Nothing is due at the
// first purge pass (-due 0s), so that no start purges a day's worth
// beside the measures.
//
// The command is built without -race: under the race detector the build
// is several times slower (50,000 batches took 27 s, 200,000 would take
// about two minutes); the builder's own tests run it under -race on a
// small shape.
func ciDatabase(t *testing.T, bin string, n int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.CommandContext(t.Context(), bin, "build", "-dir", dir, "-batches", strconv.Itoa(n), "-seed", "11",
		"-payments-per-minute", strconv.FormatFloat(ciPaymentsPerMinute, 'g', -1, 64), "-due", "0s").CombinedOutput()
	if err != nil {
		t.Fatalf("scale build: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	return dataDir(dir)
}

// ciDaemon is a daemon started by the guard, with the time its start
// took until /readyz answered 200.
type ciDaemon struct {
	d       *daemon.Daemon
	cfg     config.Config
	batches int // in its database, for the messages
	ready   time.Duration
	client  *http.Client
}

// ciTimeout bounds a start and each request: a figure that grows with size
// can take minutes under -race, and fails the guard by this instead.
const ciTimeout = 20 * time.Second

// startCI starts a daemon on data, as the shape's sinks configure it
// (file, http and exec; nothing listens behind them, and no fetch worker
// runs, so the queued batches and the acknowledged ones wait), and waits
// until /readyz answers 200.
func startCI(t *testing.T, data string, batches int) *ciDaemon {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = data
	cfg.ExportDir = filepath.Join(data, "exports")
	cfg.ListenAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.SigningSecret, cfg.APIKey, cfg.AdminToken = config.Secret(ciSecret), config.Secret("k"), config.Secret(ciToken)
	cfg.APIBaseURL = "http://127.0.0.1:1"
	cfg.Sinks = "file,http,exec"
	cfg.HTTPSinkURL = "http://127.0.0.1:1/hooks"
	cfg.HTTPSinkSecret = config.Secret("whsec_" + "c2NhbGUtdGVzdC1zZWNyZXQtMzItYnl0ZXMtbG9uZyE=")
	cfg.ExecSinkCommand = `["/bin/false"]`
	if err := cfg.Validate(daemon.SinkRules()); err != nil {
		t.Fatal(err)
	}
	cfg.FetchWorkers = 0
	c := &ciDaemon{cfg: cfg, batches: batches, client: &http.Client{Timeout: ciTimeout}}
	at := time.Now()
	c.d = daemon.New(cfg, zerolog.Nop())
	if err := c.d.Start(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })
	if took := time.Since(at); took > ciTimeout {
		t.Fatalf("a start on %d batches took %s: grows with the database's size", batches, took)
	}
	url := "http://" + c.d.AdminAddr().String() + "/readyz"
	deadline := at.Add(ciTimeout)
	for {
		resp, err := c.client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.ready = time.Since(at)
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready %s after the start on %d batches: %v", ciTimeout, batches, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stop stops the daemon (once; again is a no-op).
func (c *ciDaemon) stop(t *testing.T) {
	t.Helper()
	if c.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.d.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	c.d = nil
}

// get times one admin request, until its body is read.
func (c *ciDaemon) get(t *testing.T, path string) time.Duration {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+c.d.AdminAddr().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ciToken)
	at := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s on %d batches: %v", path, c.batches, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	took := time.Since(at)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
	}
	return took
}

// ack times one signed batch.completed of a new batch, from the request
// until its 200 (which the receiver sends once the record is committed).
func (c *ciDaemon) ack(t *testing.T) time.Duration {
	t.Helper()
	var r [10]byte
	rand.Read(r[:])
	id := batchID(r)
	body := completedBody(id, 990, 10, time.Now().UTC().Truncate(time.Second))
	req, err := http.NewRequest(http.MethodPost, "http://"+c.d.Addr().String()+c.cfg.WebhookPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(ciSecret), body))
	req.Header.Set("X-Service-Attempt", "1")
	at := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("notification of %s on %d batches: %v", id, c.batches, err)
	}
	got, err := io.ReadAll(resp.Body)
	took := time.Since(at)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"accepted"`)) {
		t.Fatalf("notification of %s: %d %s, %v", id, resp.StatusCode, got, err)
	}
	return took
}

// spread is the range of ds, for the log.
func spread(ds []time.Duration) string {
	return fmt.Sprintf("%s–%s", slices.Min(ds).Round(10*time.Microsecond), slices.Max(ds).Round(10*time.Microsecond))
}

// median returns the middle of ds (the upper middle of an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		panic("median of nothing")
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
