package daemon

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// BenchmarkFetchExport measures the fetch side: the simulator serves
// 1,000-item batches, batchhook pages them 100 at a time (10 pages, each
// fsynced and checkpointed) and publishes the exports.
//
//	go test -run XXX -bench BenchmarkFetchExport -benchtime 20x ./internal/daemon/
func BenchmarkFetchExport(b *testing.B) {
	dir := b.TempDir()
	cfg := config.Defaults()
	cfg.AdminAddr, cfg.DataDir, cfg.ExportDir = "127.0.0.1:0", dir, filepath.Join(dir, "exports")
	cfg.SigningSecret, cfg.APIKey, cfg.PageLimit = config.Secret("s"), config.Secret("k"), 100
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sim, err := lookupsim.New(lookupsim.Options{APIKey: "k", SigningSecret: []byte("s"),
		WebhookURL: "http://" + ln.Addr().String() + cfg.WebhookPath, ProcessingDelay: time.Millisecond,
		SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer sim.Close(context.Background())
	cfg.APIBaseURL = sim.URL()
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		b.Fatal(err)
	}
	defer d.Stop(context.Background())
	cpfs := make([][]string, b.N)
	for i := range cpfs {
		cpfs[i] = lookupsim.SampleCPFs(1000, int64(i))
	}
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
	b.ReportMetric(float64(b.N*1000)/time.Since(start).Seconds(), "items/s")
}
