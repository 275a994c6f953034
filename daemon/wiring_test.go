package daemon

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// strictProvider serves pages only when asked the way the configuration
// says: limit=7, the cursor in ?after=, items under "items" beside another
// array (so the default "one array member" rule would fail). It counts
// requests in flight.
type strictProvider struct {
	items    int
	delay    time.Duration
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	requests atomic.Int32
	badAsks  atomic.Int32
}

func (p *strictProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		m := p.maxSeen.Load()
		if n <= m || p.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	p.requests.Add(1)
	q := r.URL.Query()
	if q.Get("limit") != "7" || q.Has("cursor") {
		p.badAsks.Add(1)
		w.WriteHeader(400)
		return
	}
	select {
	case <-time.After(p.delay):
	case <-r.Context().Done():
		return
	}
	offset, _ := strconv.Atoi(q.Get("after"))
	end := min(offset+7, p.items)
	var buf bytes.Buffer
	buf.WriteString(`{"warnings":[],"items":[`)
	for i := offset; i < end; i++ {
		if i > offset {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"n":%d}`, i)
	}
	buf.WriteString(`],"next_cursor":`)
	if end < p.items {
		fmt.Fprintf(&buf, `"%d"}`, end)
	} else {
		buf.WriteString("null}")
	}
	w.Write(buf.Bytes())
}

func wiredDaemon(t *testing.T, p http.Handler, mod func(*config.Config)) (*Daemon, config.Config) {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.ListenAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir, cfg.ExportDir = dir, dir+"/exports"
	cfg.SigningSecret, cfg.APIKey = config.Secret("s"), config.Secret("k")
	cfg.APIBaseURL = srv.URL
	cfg.PageLimit, cfg.CursorParam, cfg.ResultsField = 7, "after", "items"
	cfg.BackoffBase, cfg.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	d := New(cfg, zerolog.Nop())
	if err := d.Start(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d, cfg
}

func deliver(t *testing.T, d *Daemon, id string, completedAt time.Time, pad int) int {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"event":"batch.completed","batch_id":%q,"status":"completed","total_requested":1,"total_found":1,"total_not_found":0,"completed_at":%q,"pad":%q}`,
		id, completedAt.UTC().Format(time.RFC3339), bytes.Repeat([]byte("x"), pad)))
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.Addr().String()+d.cfg.WebhookPath, bytes.NewReader(body))
	req.Header.Set(signature.Header, signature.Sign([]byte("s"), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitState(t *testing.T, d *Daemon, id string, want store.State) *store.Batch {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := d.Batch(id)
		if err == nil && b.State == want {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s: %+v %v", id, want, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConfigurationReachesEveryPart(t *testing.T) {
	p := &strictProvider{items: 20}
	d, _ := wiredDaemon(t, p, func(c *config.Config) {
		c.MaxBodyBytes = 1024
		c.Retention = time.Hour
	})
	if code := deliver(t, d, "b_ok", time.Now(), 0); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	b := waitState(t, d, "b_ok", store.StateExported)
	if b.Checkpoint.Items != 20 || b.Checkpoint.Pages != 3 || p.badAsks.Load() != 0 {
		t.Fatalf("exported %d items in %d pages, %d requests not asked as configured", b.Checkpoint.Items, b.Checkpoint.Pages, p.badAsks.Load())
	}
	// MAX_BODY_BYTES=1024.
	if code := deliver(t, d, "b_big", time.Now(), 1100); code != 413 {
		t.Fatalf("body over MAX_BODY_BYTES: %d, want 413", code)
	}
	// RETENTION=1h: completed two hours ago is abandoned without a request.
	before := p.requests.Load()
	if code := deliver(t, d, "b_old", time.Now().Add(-2*time.Hour), 0); code != 200 {
		t.Fatalf("delivery: %d", code)
	}
	old := waitState(t, d, "b_old", store.StateAbandoned)
	if p.requests.Load() != before || old.LastError == "" {
		t.Fatalf("retention: %d requests, reason %q", p.requests.Load()-before, old.LastError)
	}
}

func TestFetchWorkersBoundsConcurrency(t *testing.T) {
	p := &strictProvider{items: 7, delay: 150 * time.Millisecond}
	d, _ := wiredDaemon(t, p, func(c *config.Config) { c.FetchWorkers = 3 })
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			deliver(t, d, fmt.Sprintf("b_%d", i), time.Now(), 0)
		}(i)
	}
	wg.Wait()
	for i := 0; i < 8; i++ {
		waitState(t, d, fmt.Sprintf("b_%d", i), store.StateExported)
	}
	if got := p.maxSeen.Load(); got != 3 {
		t.Fatalf("at most %d requests in flight, want exactly FETCH_WORKERS=3", got)
	}
}

func TestStopWaitsForWorkersAndCostsNoAttempt(t *testing.T) {
	p := &strictProvider{items: 30, delay: 300 * time.Millisecond}
	d, cfg := wiredDaemon(t, p, nil)
	deliver(t, d, "b_stop", time.Now(), 0)
	deadline := time.Now().Add(30 * time.Second)
	for { // wait until the first page is checkpointed and the second is in flight
		b, _ := d.Batch("b_stop")
		if b != nil && b.Checkpoint.Pages >= 1 && p.inFlight.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fetch did not progress")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st, err := store.Open(cfg.DataDir, time.Second)
	if err != nil {
		t.Fatalf("database not released by Stop: %v", err)
	}
	defer st.Close()
	b, err := st.Get("b_stop")
	if err != nil || b.State != store.StateQueued || b.FetchAttempts != 0 || b.Checkpoint.Pages < 1 {
		t.Fatalf("after Stop: %+v %v; want queued at its checkpoint with no attempt counted", b, err)
	}
}
