package daemon

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

func testConfig(t *testing.T, dir string) (config.Config, net.Listener, *lookupsim.Server) {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = dir
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.ExportDir = filepath.Join(dir, "exports")
	cfg.SigningSecret, cfg.APIKey = config.Secret("s"), config.Secret("k")
	cfg.BackoffBase = 20 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := lookupsim.New(lookupsim.Options{APIKey: "k", SigningSecret: []byte("s"),
		WebhookURL: "http://" + ln.Addr().String() + cfg.WebhookPath, ProcessingDelay: 20 * time.Millisecond,
		RetryBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close(context.Background()) })
	cfg.APIBaseURL = sim.URL()
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	return cfg, ln, sim
}

func TestStartExportStopTwiceAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, sim := testConfig(t, dir)
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	id, err := sim.Submit(lookupsim.SampleCPFs(30, 1))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := d.Batch(id)
		if err == nil && b.State == store.StateExported {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not exported: %+v %v", b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A second daemon on the same data dir fails with ErrLocked while the first runs.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := New(cfg, zerolog.Nop()).Start(ln2); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Start = %v, want ErrLocked", err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
	// The lock is released: a restart on the same directory sees the batch.
	cfg.ListenAddr = "127.0.0.1:0"
	d2 := New(cfg, zerolog.Nop())
	if err := d2.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop(context.Background())
	if b, err := d2.Batch(id); err != nil || b.State != store.StateExported {
		t.Fatalf("after restart: %+v %v", b, err)
	}
}

func TestStartFailsOnABusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg, ln, _ := testConfig(t, t.TempDir())
	ln.Close()
	cfg.ListenAddr = busy.Addr().String()
	d := New(cfg, zerolog.Nop())
	if err := d.Start(nil); err == nil {
		d.Stop(context.Background())
		t.Fatal("Start succeeded on a port in use")
	}
	// The failed start released the database.
	s, err := store.Open(cfg.DataDir, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("database still locked after a failed start: %v", err)
	}
	s.Close()
}
