package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// The fetch side's ratio: BenchmarkFetchExport's items/s over
// BenchmarkFetchDiscard's, measured in the same invocation, interleaved:
//
//	go test -run XXX -bench 'BenchmarkFetch(Export|Discard)$' -benchtime 100x -count 5 ./daemon/
//
// Both start the same simulator (1,000-item batches, 1 ms processing),
// submit b.N batches with the clock running, learn of each by its webhook
// and page it with the daemon's page client (pageClient: same limit,
// cursor parameter, key, HTTP client) on FETCH_WORKERS workers.

const benchBatchItems = 1000

// benchConfig is the configuration both fetch benchmarks share.
func benchConfig(dir string) config.Config {
	cfg := config.Defaults()
	cfg.AdminAddr, cfg.DataDir, cfg.ExportDir = "127.0.0.1:0", dir, filepath.Join(dir, "exports")
	cfg.SigningSecret, cfg.APIKey, cfg.PageLimit = config.Secret("s"), config.Secret("k"), 100
	return cfg
}

// benchSim starts the simulator, sending its webhooks to webhookURL.
func benchSim(b *testing.B, webhookURL string) *lookupsim.Server {
	b.Helper()
	sim, err := lookupsim.New(lookupsim.Options{APIKey: "k", SigningSecret: []byte("s"),
		WebhookURL: webhookURL, ProcessingDelay: time.Millisecond,
		SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sim.Close(context.Background()) })
	return sim
}

// benchCPFs builds the b.N batches' CPFs before the clock starts.
func benchCPFs(n int) [][]string {
	cpfs := make([][]string, n)
	for i := range cpfs {
		cpfs[i] = lookupsim.SampleCPFs(benchBatchItems, int64(i))
	}
	return cpfs
}

// BenchmarkFetchExport measures the fetch side: the simulator serves
// 1,000-item batches, batchhook pages them 100 at a time (10 pages, each
// fsynced and checkpointed) and publishes the exports.
func BenchmarkFetchExport(b *testing.B) {
	cfg := benchConfig(b.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sim := benchSim(b, "http://"+ln.Addr().String()+cfg.WebhookPath)
	cfg.APIBaseURL = sim.URL()
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		b.Fatal(err)
	}
	defer d.Stop(context.Background())
	cpfs := benchCPFs(b.N)
	b.ResetTimer()
	start := time.Now()
	ids := make([]string, b.N)
	for i := range ids {
		if ids[i], err = sim.Submit(cpfs[i]); err != nil {
			b.Fatal(err)
		}
	}
	for _, id := range ids {
		for {
			bt, err := d.Batch(id)
			if err == nil && bt.State == store.StateExported {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer() // stopping the daemon and the simulator is not the fetch
	b.ReportMetric(float64(b.N*benchBatchItems)/elapsed.Seconds(), "items/s")
}

// BenchmarkFetchDiscard is BenchmarkFetchExport's baseline: what any client
// must do to read the pages. It reads every page with the daemon's own page
// client (fetcher.Client.Page: GET, body read in full, the page decoded to
// find next_cursor and its items) and drops it. Decoding is in the
// baseline because a client cannot follow the cursor nor hand items on
// without it; staging, fsync, checkpoints, publish and the webhook's
// durable record are not: they are what batchhook adds.
func BenchmarkFetchDiscard(b *testing.B) {
	cfg := benchConfig(b.TempDir())
	notified := make(chan string, b.N)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct {
			BatchID string `json:"batch_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.BatchID == "" {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		notified <- n.BatchID
	}))
	defer hook.Close()
	sim := benchSim(b, hook.URL+cfg.WebhookPath)
	cfg.APIBaseURL = sim.URL()
	client, err := pageClient(cfg, func() []byte { return []byte(cfg.APIKey) }, nil)
	if err != nil {
		b.Fatal(err)
	}
	cpfs := benchCPFs(b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range cpfs {
		if _, err := sim.Submit(cpfs[i]); err != nil {
			b.Fatal(err)
		}
	}
	work := make(chan string)
	var items atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range cfg.FetchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				n, err := readBatch(client, id)
				if err != nil {
					failed.Store(err)
				}
				items.Add(n)
			}
		}()
	}
	for range b.N {
		work <- <-notified
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if got, want := items.Load(), int64(b.N*benchBatchItems); got != want {
		b.Fatalf("read %d items, want %d", got, want)
	}
	b.ReportMetric(float64(b.N*benchBatchItems)/elapsed.Seconds(), "items/s")
}

// readBatch pages batchID to its end and returns how many items it read.
func readBatch(c *fetcher.Client, batchID string) (int64, error) {
	var n int64
	cursor := ""
	for {
		page, err := c.Page(context.Background(), batchID, cursor)
		if err != nil {
			return n, err
		}
		n += int64(len(page.Items))
		if page.Next == nil {
			return n, nil
		}
		cursor = *page.Next
	}
}
