package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/store"
)

// recordingSink delivers every export and keeps what it read.
type recordingSink struct {
	name string
	mu   sync.Mutex
	got  map[string]string // batch id → items read
}

func (s *recordingSink) Name() string { return s.name }

func (s *recordingSink) Deliver(_ context.Context, e sink.Export, _ sink.Progress) sink.Result {
	rc, err := e.OpenItems()
	if err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: err.Error()}
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: err.Error()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got[e.BatchID] = string(b)
	return sink.Result{Outcome: sink.Delivered}
}

func (s *recordingSink) items(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.got[id]
	return v, ok
}

func TestBuildSinksBuildsTheConfiguredOnes(t *testing.T) {
	cfg := config.Defaults()
	m, err := buildSinks(cfg, nil, nil, zerolog.Nop())
	if err != nil || len(m) != 0 {
		t.Fatalf("file only: %v %v; want no delivery sink", m, err)
	}
	cfg.Sinks, cfg.ExecSinkCommand = "file,exec,http", `["/bin/true"]`
	cfg.HTTPSinkURL = "http://127.0.0.1:1/hook"
	m, err = buildSinks(cfg, func() []byte { return []byte("0123456789abcdef0123456789abcdef") }, nil, zerolog.Nop())
	if err != nil || len(m) != 2 || m["exec"].Name() != "exec" || m["http"].Name() != "http" {
		t.Fatalf("file,exec,http: %v %v; want the exec and http sinks", m, err)
	}
	cfg.ExecSinkCommand = `["/nonexistent/load-results"]`
	if _, err := buildSinks(cfg, nil, nil, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_EXEC_SINK_COMMAND") {
		t.Fatalf("a missing exec command: %v; want an error naming the variable", err)
	}
}

// Without file, an export goes to the sink and is then removed; the batch
// shows it.
func TestDeliveriesFlowThroughTheDaemon(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, sim := testConfig(t, dir)
	cfg.Sinks, cfg.ExecSinkCommand = "exec", `["/bin/true"]`
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	rec := &recordingSink{name: "exec", got: map[string]string{}}
	d := New(cfg, zerolog.Nop())
	d.makeSinks = func(config.Config, func() []byte) (map[string]sink.Sink, error) {
		return map[string]sink.Sink{"exec": rec}, nil
	}
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	id, err := sim.Submit(lookupsim.SampleCPFs(12, 1))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := d.Batch(id)
		if err == nil && b.ExportRemoved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not delivered and removed: %+v %v", b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	items, ok := rec.items(id)
	if !ok || strings.Count(items, "\n") != 12 {
		t.Fatalf("the sink read %q", items)
	}
	// The removal is recorded first, then the directory goes.
	for {
		_, err := os.Lstat(filepath.Join(cfg.ExportDir, id))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("export directory still there: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ds, err := d.store.Deliveries(id)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered {
		t.Fatalf("deliveries = %+v %v", ds, err)
	}
}

// BATCHHOOK_HTTP_SINK_SECRET_FILE is read again on SIGHUP, decoded; a bad
// file keeps the old key.
func TestReloadSwapsTheHTTPSinkKey(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	secret := filepath.Join(dir, "hook-secret")
	// printf "$(printf '\\%03o' $(seq 0 23))" | base64
	if err := os.WriteFile(secret, []byte("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Sinks, cfg.HTTPSinkURL, cfg.HTTPSinkSecretFile = "file,http", "https://r.example/", secret
	cfg.HTTPSinkSecret, _ = config.ReadSecretFile(secret)
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	var key func() []byte
	d := New(cfg, zerolog.Nop())
	d.makeSinks = func(_ config.Config, k func() []byte) (map[string]sink.Sink, error) {
		key = k
		return map[string]sink.Sink{"http": &recordingSink{name: "http", got: map[string]string{}}}, nil
	}
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	want := make([]byte, 24)
	for i := range want {
		want[i] = byte(i)
	}
	if !bytes.Equal(key(), want) {
		t.Fatalf("key at start = %x", key())
	}
	// 24 bytes of 0xff: printf '\377%.0s' $(seq 24) | base64
	if err := os.WriteFile(secret, []byte("whsec_////////////////////////////////\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key(), bytes.Repeat([]byte{0xff}, 24)) {
		t.Fatalf("key after reload = %x", key())
	}
	if err := os.WriteFile(secret, []byte("not-a-whsec\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_HTTP_SINK_SECRET_FILE") {
		t.Fatalf("reload of a bad secret = %v", err)
	}
	if !bytes.Equal(key(), bytes.Repeat([]byte{0xff}, 24)) {
		t.Fatalf("a failed reload changed the key: %x", key())
	}
}

// blockingSink holds every delivery until its context ends (a stop).
type blockingSink struct{ started chan string }

func (s *blockingSink) Name() string { return "exec" }

func (s *blockingSink) Deliver(ctx context.Context, e sink.Export, _ sink.Progress) sink.Result {
	s.started <- e.BatchID
	<-ctx.Done()
	return sink.Result{Outcome: sink.Retry, Kind: "shutdown", Reason: ctx.Err().Error()}
}

// A stop during a delivery leaves it pending; the next start delivers it.
func TestARestartResumesAnInterruptedDelivery(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, sim := testConfig(t, dir)
	cfg.Sinks, cfg.ExecSinkCommand = "file,exec", `["/bin/true"]`
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	blocked := &blockingSink{started: make(chan string, 1)}
	d := New(cfg, zerolog.Nop())
	d.makeSinks = func(config.Config, func() []byte) (map[string]sink.Sink, error) {
		return map[string]sink.Sink{"exec": blocked}, nil
	}
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	id, err := sim.Submit(lookupsim.SampleCPFs(5, 1))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-blocked.started:
		if got != id {
			t.Fatalf("delivering %s, want %s", got, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery did not start")
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	rec := &recordingSink{name: "exec", got: map[string]string{}}
	cfg.ListenAddr = "127.0.0.1:0"
	d2 := New(cfg, zerolog.Nop())
	d2.makeSinks = func(config.Config, func() []byte) (map[string]sink.Sink, error) {
		return map[string]sink.Sink{"exec": rec}, nil
	}
	if err := d2.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := d2.store.Deliveries(id)
		if err == nil && len(ds) == 1 && ds[0].State == store.DeliveryDelivered {
			if ds[0].Attempts != 1 {
				t.Fatalf("the interrupted attempt counted: %+v", ds[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered after the restart: %+v %v", ds, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if items, ok := rec.items(id); !ok || strings.Count(items, "\n") != 5 {
		t.Fatalf("the sink read %q", items)
	}
	if _, err := os.Stat(filepath.Join(cfg.ExportDir, id)); err != nil {
		t.Fatalf("with file configured the export stays: %v", err)
	}
}
