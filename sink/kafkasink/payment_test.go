package kafkasink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/batchhook/batchhook/sink"
)

func testPayment(t *testing.T, seq uint64, txID, note string) sink.Payment {
	t.Helper()
	at := time.Date(2026, 11, 24, 10, 0, int(seq), 0, time.UTC)
	raw := fmt.Sprintf(`{"transaction": {"id": %q, "note": %q}}`, txID, note)
	line, err := sink.PaymentLine(seq, at, "transaction.paid", 1, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sink.Payment{Seq: seq, ReceivedAt: at, Event: "transaction.paid", Attempt: 1,
		DedupKey: fmt.Sprintf("dedup-%d", seq), TransactionID: txID, Line: line}
}

// consumePayments reads the payments topic, read_committed, until it has
// want records or the timeout passes.
func consumePayments(t *testing.T, brokers []string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(DefaultPaymentsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// Payment events go to their own topic in one transaction, keyed by
// transaction.id (else the dedup key), the value the line; a batch
// delivered at the same time on the same producer is not disturbed.
func TestPaymentsGoToTheirTopicKeyedByTransaction(t *testing.T) {
	c := newCluster(t, 3, kfake.SeedTopics(3, DefaultPaymentsTopic))
	s := newTestSink(t, c.ListenAddrs(), Options{})
	run := []sink.Payment{testPayment(t, 1, "tx-A", "a"), testPayment(t, 2, "tx-B", "b"), testPayment(t, 3, "tx-A", "c"), testPayment(t, 4, "", "d")}
	e, lines := testExport(t, "b-with-payments", 200)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
			t.Errorf("batch: %+v", r)
		}
	}()
	done, res := s.DeliverPayments(context.Background(), run)
	wg.Wait()
	if done != 4 || res.Outcome != sink.Delivered {
		t.Fatalf("done %d %+v", done, res)
	}
	rs := consumePayments(t, c.ListenAddrs(), 4, 10*time.Second)
	if len(rs) != 4 {
		t.Fatalf("%d payment records, want 4", len(rs))
	}
	bySeq := map[string]*kgo.Record{}
	for _, r := range rs {
		bySeq[header(r, HeaderSeq)] = r
	}
	for _, p := range run {
		r := bySeq[fmt.Sprint(p.Seq)]
		if r == nil {
			t.Fatalf("no record of seq %d", p.Seq)
		}
		wantKey := p.TransactionID
		if wantKey == "" {
			wantKey = p.DedupKey
		}
		if string(r.Key) != wantKey || string(r.Value) != string(p.Line) || header(r, HeaderKind) != KindPayment ||
			header(r, HeaderEvent) != "transaction.paid" || len(r.Headers) != 3 {
			t.Errorf("seq %d: key %q value %s headers %v", p.Seq, r.Key, r.Value, r.Headers)
		}
	}
	if a1, a3 := bySeq["1"], bySeq["3"]; a1.Partition != a3.Partition || a1.Offset >= a3.Offset {
		t.Errorf("tx-A's events: partitions %d/%d offsets %d/%d; want one partition, in log order", a1.Partition, a3.Partition, a1.Offset, a3.Offset)
	}
	batch := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, e.BatchID) == 1 })
	checkBatch(t, batch, e, lines)
}

// A record the broker refuses for good fails only its event: the events
// before it are committed, one per transaction, and it is named.
func TestPaymentTooLargeFailsOnlyItsEvent(t *testing.T) {
	c := newCluster(t, 1, kfake.SeedTopics(1, DefaultPaymentsTopic), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2048"}))
	s := newTestSink(t, c.ListenAddrs(), Options{})
	noise := make([]byte, 4096)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	run := []sink.Payment{testPayment(t, 1, "tx-1", "small"), testPayment(t, 2, "tx-2", hex.EncodeToString(noise)), testPayment(t, 3, "tx-3", "small")}
	done, res := s.DeliverPayments(context.Background(), run)
	if done != 1 || res.Outcome != sink.Failed || res.Kind != "too_large" {
		t.Fatalf("done %d %+v", done, res)
	}
	rs := consumePayments(t, c.ListenAddrs(), 2, 3*time.Second)
	if len(rs) != 1 || header(rs[0], HeaderSeq) != "1" {
		t.Fatalf("committed %d records (%v); want seq 1 only", len(rs), rs)
	}
}

func TestPaymentsCancelledRetry(t *testing.T) {
	c := newCluster(t, 1, kfake.SeedTopics(1, DefaultPaymentsTopic))
	s := newTestSink(t, c.ListenAddrs(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if done, res := s.DeliverPayments(ctx, []sink.Payment{testPayment(t, 1, "tx", "")}); done != 0 || res.Outcome != sink.Retry {
		t.Fatalf("done %d %+v", done, res)
	}
}
