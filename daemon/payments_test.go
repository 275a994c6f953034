package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/sink/natssink"
	"github.com/batchhook/batchhook/store"
)

// hookReceiver keeps the webhook-id and body of every POST.
type hookReceiver struct {
	mu     sync.Mutex
	ids    []string
	bodies [][]byte
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	h.mu.Lock()
	h.ids = append(h.ids, r.Header.Get("webhook-id"))
	h.bodies = append(h.bodies, b)
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) got() ([]string, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ids...), append([][]byte(nil), h.bodies...)
}

// recordPayments logs n events as the payments endpoint would.
func recordPayments(t *testing.T, st *store.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, created, err := st.RecordPayment(store.PaymentEvent{ReceivedAt: time.Now().UTC(), Event: "transaction.paid", Attempt: 1,
			DedupKey: fmt.Sprintf("tx-%d|paid", i), TransactionID: fmt.Sprintf("tx-%d", i)},
			[]byte(fmt.Sprintf(`{"transaction": {"id": "tx-%d"}}`, i)))
		if err != nil || !created {
			t.Fatalf("record payment %d: %v %v", i, created, err)
		}
	}
}

// dayLines returns the lines of every payment day file. A rewrite's
// temporary copy (".tmp-<day>.ndjson", which the glob's "*" also matches)
// is not a day file: counting it saw lines the day file did not hold yet.
func dayLines(t *testing.T, exportDir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(exportDir, filesink.Dir, "*.ndjson"))
	var out []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")...)
	}
	return out
}

// With payments on, each logged event goes to file and http (not exec),
// each once, also across a restart; the metrics count them.
func TestPaymentsFlowToTheirSinks(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	hook := &hookReceiver{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	cfg.Sinks, cfg.ExecSinkCommand = "file,exec,http", `["/bin/true"]`
	cfg.HTTPSinkURL, cfg.HTTPSinkSecret = srv.URL+"/hook", config.Secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX")
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	d := New(cfg, zerolog.Nop())
	d.payments = true
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.store.PaymentSinks(), ","); got != "file,http" {
		t.Fatalf("payment sinks %q; want file,http (exec takes no payments)", got)
	}
	recordPayments(t, d.store, 1, 3)
	waitFor(t, func() bool {
		ids, _ := hook.got()
		return len(dayLines(t, cfg.ExportDir)) == 3 && len(ids) == 3
	})
	ids, bodies := hook.got()
	lines := dayLines(t, cfg.ExportDir)
	for i := range 3 {
		if ids[i] != fmt.Sprintf("payment:%d", i+1) {
			t.Errorf("webhook-id %d = %q", i, ids[i])
		}
		var msg struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(bodies[i], &msg); err != nil || msg.Type != "payment.event" || string(msg.Data) != lines[i] {
			t.Errorf("message %d: %s (%v); want data == the day file's line %s", i, bodies[i], err, lines[i])
		}
	}
	// The receiver has the messages before the dispatcher records them:
	// wait for the record (the metrics read it), then check every figure.
	wants := []string{`batchhook_payment_deliveries_total{outcome="delivered",sink="file"} 3`,
		`batchhook_payment_deliveries_total{outcome="delivered",sink="http"} 3`, `batchhook_payment_backlog{sink="http"} 0`}
	scrape := func() string {
		rec := httptest.NewRecorder()
		d.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	waitFor(t, func() bool {
		body := scrape()
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
	body := scrape()
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	cfg.ListenAddr = "127.0.0.1:0"
	d2 := New(cfg, zerolog.Nop())
	d2.payments = true
	if err := d2.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop(context.Background())
	recordPayments(t, d2.store, 4, 1)
	waitFor(t, func() bool {
		ids, _ := hook.got()
		return len(dayLines(t, cfg.ExportDir)) == 4 && len(ids) == 4
	})
	if ids, _ := hook.got(); ids[3] != "payment:4" {
		t.Fatalf("after the restart: ids %v", ids)
	}
	if d2.PaymentFiles() == nil {
		t.Error("PaymentFiles is nil with file configured")
	}
}

// waitFor waits until ok holds; its 30 s are only a bound for a failure,
// with room for a loaded machine.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Payments off (no payments secret): no payment sink, no payments
// directory; exec alone with payments on: a warning at start.
func TestPaymentsOffAndExecOnly(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatal(err)
	}
	if len(d.store.PaymentSinks()) != 0 || d.PaymentFiles() != nil {
		t.Errorf("payments off: sinks %v", d.store.PaymentSinks())
	}
	if _, err := os.Stat(filepath.Join(cfg.ExportDir, filesink.Dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("payments off made %s: %v", filesink.Dir, err)
	}
	d.Stop(context.Background())

	cfg.Sinks, cfg.ExecSinkCommand, cfg.ListenAddr = "exec", `["/bin/true"]`, "127.0.0.1:0"
	var logs bytes.Buffer
	d = New(cfg, zerolog.New(&logs))
	d.payments = true
	if err := d.Start(nil); err != nil {
		t.Fatal(err)
	}
	d.Stop(context.Background())
	if !strings.Contains(logs.String(), `"event":"payment_sinks_none"`) {
		t.Errorf("no payment_sinks_none warning in %s", logs.String())
	}
}

// A reachable NATS without a stream for the payments subject stops the
// start (exit 2), naming the variable; with payments off it does not
// matter.
func TestNATSPaymentsSubjectNeedsAStream(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer ns.Shutdown()
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	cfg.Sinks, cfg.NatsURL, cfg.NatsCreateStream = "file,nats", ns.ClientURL(), false
	// The results subject has a stream (made by the check, then switched
	// off); the payments subject has none.
	cfg.NatsCreateStream = true
	if s, err := newNATSSink(cfg, sinkEnv{log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	} else {
		s.(*natssink.Sink).Close()
	}
	cfg.NatsCreateStream = false
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatalf("payments off: %v", err)
	}
	d.Stop(context.Background())
	cfg.ListenAddr = "127.0.0.1:0"
	d = New(cfg, zerolog.Nop())
	d.payments = true
	err = d.Start(nil)
	if !errors.Is(err, ErrSinkConfig) || !strings.Contains(err.Error(), "BATCHHOOK_NATS_PAYMENTS_SUBJECT") || !strings.Contains(err.Error(), "batchhook.payments") {
		t.Fatalf("start without a payments stream: %v", err)
	}
}
