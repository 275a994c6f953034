package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

func TestBuildSinksKafkaTransactionalID(t *testing.T) {
	cfg := config.Defaults()
	cfg.Sinks, cfg.KafkaBrokers = "kafka", "127.0.0.1:9092"
	var asked []string
	stable := func(name string) (string, error) {
		asked = append(asked, name)
		return "batchhook-0123456789abcdef", nil
	}
	m, err := buildSinks(cfg, nil, stable, zerolog.Nop())
	if err != nil || m["kafka"] == nil || m["kafka"].Name() != "kafka" || len(asked) != 1 || asked[0] != kafkaTxnIDName {
		t.Fatalf("kafka with the default id: %v %v, asked %v", m, err, asked)
	}
	cfg.KafkaTransactionalID, asked = "ops-chosen", nil
	if _, err := buildSinks(cfg, nil, stable, zerolog.Nop()); err != nil || len(asked) != 0 {
		t.Fatalf("a configured id: %v, asked the store %v", err, asked)
	}
	cfg.KafkaTLSCaFile = "/nonexistent/ca.pem"
	if _, err := buildSinks(cfg, nil, stable, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_KAFKA_TLS_CA_FILE") {
		t.Fatalf("a missing CA file: %v; want an error naming the variable", err)
	}
}

// An unreachable broker does not stop the start; the delivery is retried
// and stays pending; the default transactional id is the same after a
// restart.
func TestKafkaUnreachableBrokerDoesNotStopTheStart(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, sim := testConfig(t, dir)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sinks, cfg.KafkaBrokers, cfg.KafkaTimeout = "file,kafka", down.Addr().String(), time.Second
	down.Close()
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	d := New(cfg, zerolog.Nop())
	if err := d.Start(ln); err != nil {
		t.Fatalf("start with an unreachable broker: %v", err)
	}
	id, err := sim.Submit(lookupsim.SampleCPFs(3, 5))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := d.store.Deliveries(id)
		if err == nil && len(ds) == 1 && ds[0].Attempts > 0 {
			if ds[0].State != store.DeliveryPending || ds[0].ErrorKind == "" {
				t.Fatalf("delivery to a down broker: %+v", ds[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attempt recorded: %+v %v", ds, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first, err := d.store.StableID(kafkaTxnIDName)
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if time.Since(stopped) > 5*time.Second {
		t.Fatalf("stop took %s", time.Since(stopped))
	}
	s, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again, err := s.StableID(kafkaTxnIDName); err != nil || again != first {
		t.Fatalf("transactional id after restart %q %v, want %q", again, err, first)
	}
}

// TestKafkaUnreachableAtStartIsAWarning: brokers that do not answer at
// start are logged as kafka_unreachable (sink and error), and the sink is
// still made.
func TestKafkaUnreachableAtStartIsAWarning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg := config.Defaults()
	cfg.Sinks, cfg.KafkaBrokers, cfg.KafkaTransactionalID = "kafka", closed, "batchhook-test"
	var logs testutil.SyncBuffer
	m, err := buildSinks(cfg, nil, nil, zerolog.New(&logs))
	if err != nil || m["kafka"] == nil {
		t.Fatalf("buildSinks with a closed broker port: %v %v", m, err)
	}
	if c, ok := m["kafka"].(io.Closer); ok {
		defer c.Close()
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["event"] == "kafka_unreachable" {
			line = e
		}
	}
	if line == nil || line["level"] != "warn" || line["sink"] != "kafka" || line["component"] != "sink" ||
		!strings.Contains(fmt.Sprint(line["error"]), closed) {
		t.Fatalf("no kafka_unreachable warning naming the broker:\n%s", logs.String())
	}
}
