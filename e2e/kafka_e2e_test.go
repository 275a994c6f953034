package e2e

// End-to-end test of the kafka sink: the real binary, the
// provider simulator, and franz-go's kfake, an in-process Kafka speaking
// the real protocol (transactions included), on loopback. The daemon is
// SIGKILLed twice mid-transaction: once while its records reach the
// broker, once when it asks to commit.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
)

const kafkaTopic = "batchhook.results"

// killOn arms a one-shot control on key: when match accepts a request, the
// daemon whose pid arrives on pid is SIGKILLed. swallow drops the request
// unanswered (the broker never acts on it); otherwise the broker handles
// it as usual after the kill. killed is closed once the kill is sent.
func killOn(c *kfake.Cluster, key kmsg.Key, match func(kmsg.Request) bool, swallow bool, pid <-chan int) <-chan struct{} {
	killed := make(chan struct{})
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !match(req) {
			return nil, nil, false
		}
		_ = syscall.Kill(<-pid, syscall.SIGKILL)
		close(killed)
		if !swallow {
			c.DropControl()
		}
		return nil, nil, swallow
	})
	return killed
}

// consumeKafka reads the topic from the start at level until every id has
// its manifest or the timeout passes.
func consumeKafka(t *testing.T, brokers []string, level kgo.IsolationLevel, ids []string, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(kafkaTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []*kgo.Record
	seen := map[string]bool{}
	for len(seen) < len(ids) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		for _, r := range fs.Records() {
			got = append(got, r)
			if kafkaHeader(r, "batchhook-kind") == "manifest" {
				seen[string(r.Key)] = true
			}
		}
	}
	return got
}

func kafkaHeader(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

// checkKafkaBatch: the committed records of id are its items once each, in
// export order, byte-equal to results.ndjson (itself byte-equal to what the
// simulator served), then its compact manifest; one partition, one key.
func checkKafkaBatch(t *testing.T, s *setup, rs []*kgo.Record, id string) {
	t.Helper()
	results := s.checkExport(t, id)
	lines := bytes.SplitAfter(results, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty tail after the last "\n"
	var mine []*kgo.Record
	for _, r := range rs {
		if string(r.Key) == id {
			mine = append(mine, r)
		}
	}
	if len(mine) != len(lines)+1 {
		t.Fatalf("batch %s: %d committed records, want %d items and one manifest (exactly once)", id, len(mine), len(lines))
	}
	for i, r := range mine[:len(lines)] {
		if !bytes.Equal(append(bytes.Clone(r.Value), '\n'), lines[i]) || kafkaHeader(r, "batchhook-index") != strconv.Itoa(i) ||
			kafkaHeader(r, "batchhook-kind") != "item" || kafkaHeader(r, "batchhook-batch-id") != id || r.Partition != mine[0].Partition {
			t.Fatalf("batch %s record %d differs from item %d of the export (headers %v)", id, i, i, r.Headers)
		}
	}
	raw, err := os.ReadFile(filepath.Join(s.exports, id, export.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	last := mine[len(lines)]
	if kafkaHeader(last, "batchhook-kind") != "manifest" || !bytes.Equal(last.Value, compact.Bytes()) || last.Partition != mine[0].Partition {
		t.Fatalf("batch %s: last record %q, want the compact manifest", id, last.Value)
	}
}

func TestKafkaSinkSurvivesSIGKILLMidTransaction(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, kafkaTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_SINKS"] = "file,kafka"
	s.env["BATCHHOOK_KAFKA_BROKERS"] = brokers[0]
	s.env["BATCHHOOK_KAFKA_TIMEOUT"] = "10s"
	s.env["BATCHHOOK_PAGE_LIMIT"] = "250"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"

	// Kill 1: at the first produce request; the broker still appends its
	// records, uncommitted.
	pid1 := make(chan int, 1)
	killed1 := killOn(c, kmsg.Produce, func(kmsg.Request) bool { return true }, false, pid1)
	d1 := startDaemon(t, s.addr, s.env)
	pid1 <- d1.cmd.Process.Pid
	var ids []string
	for i, n := range []int{1000, 300, 5} {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(n, int64(500+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	select {
	case <-killed1:
	case <-time.After(20 * time.Second):
		t.Fatalf("no produce request reached the broker:\n%s", d1.out.String())
	}
	<-d1.done
	d1.done <- nil

	// Kill 2: when the restarted daemon asks to commit (every record of
	// that transaction flushed); the commit request is never acted on.
	pid2 := make(chan int, 1)
	killed2 := killOn(c, kmsg.EndTxn, func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }, true, pid2)
	d2 := startDaemon(t, s.addr, s.env)
	pid2 <- d2.cmd.Process.Pid
	select {
	case <-killed2:
	case <-time.After(20 * time.Second):
		t.Fatalf("no commit request reached the broker:\n%s", d2.out.String())
	}
	<-d2.done
	d2.done <- nil

	d3 := startDaemon(t, s.addr, s.env)
	for _, id := range ids {
		waitDelivered(t, d3, id, "kafka", 30*time.Second)
	}
	committed := consumeKafka(t, brokers, kgo.ReadCommitted(), ids, waitBound)
	for _, id := range ids {
		checkKafkaBatch(t, s, committed, id)
	}
	if len(committed) != 1000+300+5+3 {
		t.Fatalf("%d committed records, want 1308", len(committed))
	}
	// The kills did cut transactions: their records are in the log, and
	// read_committed skipped them.
	all := consumeKafka(t, brokers, kgo.ReadUncommitted(), ids, waitBound)
	if len(all) <= len(committed) {
		t.Fatalf("read_uncommitted sees %d records, read_committed %d: no cut transaction reached the log", len(all), len(committed))
	}
	t.Logf("records in the log %d, committed %d (the rest belong to the two aborted transactions)", len(all), len(committed))
	// Counted after the store has the delivery, which is what
	// waitDelivered saw.
	waitFor(t, func() bool {
		return metricValue(t, d3, `batchhook_sink_deliveries_total{outcome="delivered",sink="kafka"}`) >= 1
	})
	d3.stop(t)
	for _, leak := range []string{lookupsim.SampleCPFs(1000, 500)[0]} { // the whole logs, every daemon gone
		if bytes.Contains([]byte(d1.out.String()+d2.out.String()+d3.out.String()), []byte(leak)) {
			t.Fatal("the logs contain a CPF")
		}
	}
}
