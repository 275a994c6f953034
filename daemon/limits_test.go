package daemon

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/internal/testutil"
)

// MAX_CONNECTIONS reaches the webhook listener, and lines dropped by the
// strangers' sampler reach the metrics.
func TestConnectionCapAndDroppedLinesAreWired(t *testing.T) {
	srv := httptest.NewServer(&strictProvider{})
	defer srv.Close()
	cfg := config.Defaults()
	cfg.ListenAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.ExportDir = cfg.DataDir + "/exports"
	cfg.SigningSecret, cfg.APIKey, cfg.APIBaseURL = config.Secret("s"), config.Secret("k"), srv.URL
	cfg.FetchWorkers = 0
	cfg.MaxConnections = 1
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	d := New(cfg, zerolog.New(&testutil.SyncBuffer{}))
	if err := d.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	url := "http://" + d.Addr().String() + cfg.WebhookPath

	// One idle connection holds the only slot: a delivery waits for it.
	idle, err := net.Dial("tcp", d.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan int, 1)
	go func() {
		b := []byte(`{"event":"batch.completed","batch_id":"b_cap","status":"failed","total_requested":1,"total_found":0,"total_not_found":1}`)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
		req.Header.Set(signature.Header, signature.Sign([]byte("s"), b))
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			served <- 0
			return
		}
		resp.Body.Close()
		served <- resp.StatusCode
	}()
	select {
	case code := <-served:
		t.Fatalf("served (%d) while the one slot was held", code)
	case <-time.After(300 * time.Millisecond):
	}
	idle.Close()
	select {
	case code := <-served:
		if code != http.StatusOK {
			t.Fatalf("after the slot freed: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not served after the slot freed")
	}

	// 40 forged deliveries: at most 20 lines a second, the rest counted.
	for i := 0; i < 40; i++ {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set(signature.Header, "forged")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + d.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte(`batchhook_log_lines_dropped_total{event="webhook_rejected"}`)) {
		t.Fatalf("no dropped-lines counter for webhook_rejected in /metrics")
	}
}
