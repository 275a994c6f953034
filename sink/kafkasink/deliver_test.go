package kafkasink

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/batchhook/batchhook/sink"
)

// checkBatch: rs holds id's batch exactly once, whole: its items in export
// order with their keys and headers, byte-equal to the lines, then the
// compacted manifest, all in one partition.
func checkBatch(t *testing.T, rs []*kgo.Record, e sink.Export, lines [][]byte) {
	t.Helper()
	var mine []*kgo.Record
	for _, r := range rs {
		if header(r, HeaderBatchID) == e.BatchID {
			mine = append(mine, r)
		}
	}
	if len(mine) != len(lines)+1 {
		t.Fatalf("batch %s: %d records, want %d items and a manifest", e.BatchID, len(mine), len(lines))
	}
	part := mine[0].Partition
	for i, r := range mine {
		if string(r.Key) != e.BatchID || r.Partition != part {
			t.Fatalf("batch %s record %d: key %q partition %d, want key %s in partition %d", e.BatchID, i, r.Key, r.Partition, e.BatchID, part)
		}
		if i > 0 && r.Offset <= mine[i-1].Offset {
			t.Fatalf("batch %s record %d out of order", e.BatchID, i)
		}
		if i == len(lines) {
			break
		}
		if header(r, HeaderKind) != KindItem || header(r, HeaderIndex) != strconv.Itoa(i) || len(r.Headers) != 3 {
			t.Fatalf("batch %s record %d: headers %v", e.BatchID, i, r.Headers)
		}
		if !bytes.Equal(r.Value, lines[i]) {
			t.Fatalf("batch %s item %d: %s, want %s", e.BatchID, i, r.Value, lines[i])
		}
	}
	last := mine[len(lines)]
	var want bytes.Buffer
	want.WriteString(`{"batch_id":"` + e.BatchID + `","items":` + strconv.Itoa(len(lines)) + `}`)
	if header(last, HeaderKind) != KindManifest || len(last.Headers) != 2 || !bytes.Equal(last.Value, want.Bytes()) {
		t.Fatalf("batch %s: last record %s %v, want the compact manifest %s", e.BatchID, last.Value, last.Headers, want.Bytes())
	}
}

func TestDeliverSendsEachBatchInOneTransaction(t *testing.T) {
	c := newCluster(t, 3)
	s := newTestSink(t, c.ListenAddrs(), Options{})
	sizes := map[string]int{"b-1000": 1000, "b-7": 7, "b-empty": 0}
	exports := map[string]sink.Export{}
	lines := map[string][][]byte{}
	for id, n := range sizes {
		exports[id], lines[id] = testExport(t, id, n)
		if r := s.Deliver(context.Background(), exports[id], nopProgress{}); r.Outcome != sink.Delivered {
			t.Fatalf("batch %s: %v %s %s", id, r.Outcome, r.Kind, r.Reason)
		}
	}
	rs := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool {
		return manifests(rs, "b-1000")+manifests(rs, "b-7")+manifests(rs, "b-empty") == 3
	})
	for id := range sizes {
		checkBatch(t, rs, exports[id], lines[id])
	}
	if len(rs) != 1000+7+0+3 {
		t.Fatalf("%d records, want 1010", len(rs))
	}
}

// A transaction whose commit the broker refuses is aborted: its records
// reached the log (a read_uncommitted consumer sees them) but a
// read_committed consumer never does; the retry sends the batch whole once.
func TestAbortedTransactionIsInvisible(t *testing.T) {
	c := newCluster(t, 1)
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.EndTxnRequest)
		if !r.Commit {
			return nil, nil, false // the abort goes through
		}
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true // once: the control drops after handling
	})
	s := newTestSink(t, c.ListenAddrs(), Options{})
	e, lines := testExport(t, "b-abort", 25)
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Retry {
		t.Fatalf("refused commit: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
	raw := consume(t, c.ListenAddrs(), kgo.ReadUncommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, "b-abort") == 1 })
	if manifests(raw, "b-abort") != 1 {
		t.Fatalf("the aborted attempt's records never reached the log (%d records)", len(raw))
	}
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
		t.Fatalf("retry: %v %s %s", r.Outcome, r.Kind, r.Reason)
	}
	rs := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, "b-abort") == 1 })
	checkBatch(t, rs, e, lines)
	all := consume(t, c.ListenAddrs(), kgo.ReadUncommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, "b-abort") == 2 })
	if len(all) != 2*len(rs) {
		t.Fatalf("read_uncommitted sees %d records, read_committed %d; want twice as many (one aborted attempt)", len(all), len(rs))
	}
}

// Concurrent deliveries run one at a time: in one partition, each batch's
// records are contiguous.
func TestConcurrentDeliveriesDoNotInterleave(t *testing.T) {
	c := newCluster(t, 1)
	s := newTestSink(t, c.ListenAddrs(), Options{})
	var wg sync.WaitGroup
	ids := []string{"c-1", "c-2", "c-3", "c-4"}
	for _, id := range ids {
		e, _ := testExport(t, id, 200)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
				t.Errorf("batch %s: %v %s", id, r.Outcome, r.Reason)
			}
		}()
	}
	wg.Wait()
	rs := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return len(rs) == 4*201 })
	if len(rs) != 4*201 {
		t.Fatalf("%d records, want %d", len(rs), 4*201)
	}
	for i := 0; i < len(rs); i += 201 {
		for j := i; j < i+201; j++ {
			if string(rs[j].Key) != string(rs[i].Key) {
				t.Fatalf("record %d belongs to %s inside the run of %s", j, rs[j].Key, rs[i].Key)
			}
		}
	}
}

func TestUnknownTopicFails(t *testing.T) {
	c := newCluster(t, 1)
	s := newTestSink(t, c.ListenAddrs(), Options{Topic: "no.such.topic"})
	e, _ := testExport(t, "b-unknown", 3)
	start := time.Now()
	r := s.Deliver(context.Background(), e, nopProgress{})
	if r.Outcome != sink.Failed || r.Kind != "unknown_topic" {
		t.Fatalf("unknown topic: %v %s %s, want failed unknown_topic", r.Outcome, r.Kind, r.Reason)
	}
	t.Logf("unknown topic refused after %s: %s", time.Since(start).Round(time.Millisecond), r.Reason)
}

func TestRecordTooLargeFails(t *testing.T) {
	c := newCluster(t, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2048"}))
	s := newTestSink(t, c.ListenAddrs(), Options{})
	e, _ := testExport(t, "b-large", 1)
	noise := make([]byte, 4096) // random: compression must not shrink it under the limit
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	big := `{"cpf":"00000000000","note":"` + hex.EncodeToString(noise) + `"}` + "\n"
	writeResults(t, e, big)
	r := s.Deliver(context.Background(), e, nopProgress{})
	if r.Outcome != sink.Failed || r.Kind != "too_large" {
		t.Fatalf("record too large: %v %s %s, want failed too_large", r.Outcome, r.Kind, r.Reason)
	}
	if strings.Contains(r.Reason, hex.EncodeToString(noise[:8])) || strings.Contains(r.Reason, "cpf") {
		t.Fatalf("the reason quotes the item: %s", r.Reason)
	}
}

// An unreachable broker: New does not fail, Deliver answers Retry within
// its timeout.
func TestBrokerDownRetries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := newTestSink(t, []string{addr}, Options{Timeout: 2 * time.Second, DialTimeout: 500 * time.Millisecond})
	e, _ := testExport(t, "b-down", 3)
	start := time.Now()
	r := s.Deliver(context.Background(), e, nopProgress{})
	if r.Outcome != sink.Retry {
		t.Fatalf("broker down: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("broker down answered after %s", d)
	}
	t.Logf("broker down: retry after %s (%s: %s)", time.Since(start).Round(time.Millisecond), r.Kind, r.Reason)
}

// A shutdown (ctx cancelled) mid-delivery answers Retry.
func TestCancelledDeliveryRetries(t *testing.T) {
	c := newCluster(t, 1)
	s := newTestSink(t, c.ListenAddrs(), Options{})
	e, _ := testExport(t, "b-cancel", 50)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := s.Deliver(ctx, e, nopProgress{}); r.Outcome != sink.Retry {
		t.Fatalf("cancelled: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
		t.Fatalf("after a cancel: %v %s %s", r.Outcome, r.Kind, r.Reason)
	}
}

// An export whose results.ndjson does not match its item count is retried
// (only a change of the file since the dispatcher checked it can cause
// that: the next attempt reads the newest version), never failed for good,
// and nothing of it becomes visible.
func TestMalformedExportFailsAndStaysInvisible(t *testing.T) {
	c := newCluster(t, 1)
	s := newTestSink(t, c.ListenAddrs(), Options{})
	e, _ := testExport(t, "b-short", 10)
	e.Items = 11
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Retry || r.Kind != "local" {
		t.Fatalf("short export: %v %s %s, want retry/local", r.Outcome, r.Kind, r.Reason)
	}
	e.Items = 9
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Retry || r.Kind != "local" {
		t.Fatalf("long export: %v %s %s, want retry/local", r.Outcome, r.Kind, r.Reason)
	}
	ok, okLines := testExport(t, "b-ok", 2)
	if r := s.Deliver(context.Background(), ok, nopProgress{}); r.Outcome != sink.Delivered {
		t.Fatalf("good export after the bad ones: %v %s %s", r.Outcome, r.Kind, r.Reason)
	}
	rs := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, "b-ok") == 1 })
	if len(rs) != 3 {
		t.Fatalf("%d committed records, want only b-ok's 3", len(rs))
	}
	checkBatch(t, rs, ok, okLines)
}
