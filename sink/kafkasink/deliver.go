package kafkasink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/batchhook/batchhook/sink"
)

// The record headers (docs/sinks.md, "kafka sink").
const (
	HeaderBatchID = "batchhook-batch-id"
	HeaderIndex   = "batchhook-index"
	HeaderKind    = "batchhook-kind"
	KindItem      = "item"
	KindManifest  = "manifest"
)

// abortTimeout bounds the abort after a failed delivery; the producer is
// dropped afterwards anyway, and its successor's initialisation aborts
// whatever this one could not.
const abortTimeout = 10 * time.Second

// Deliver sends e in one transaction: its items in export order, then its
// manifest, and commits. Any failure aborts the transaction and drops the
// producer, so nothing of a failed attempt is ever visible to a
// read_committed consumer. p is not used: a batch is one unit.
func (s *Sink) Deliver(ctx context.Context, e sink.Export, _ sink.Progress) sink.Result {
	if e.BatchID == "" {
		return local(sink.Failed, errors.New("the export has no batch id"))
	}
	if e.Items < 0 {
		return local(sink.Failed, errors.New("the export counts a negative number of items"))
	}
	var manifest bytes.Buffer
	if err := json.Compact(&manifest, e.Manifest); err != nil {
		return local(sink.Failed, errors.New("manifest.json is not valid JSON"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	cl, err := s.clientLocked()
	if err != nil {
		return local(sink.Retry, err)
	}
	res := s.send(ctx, cl, e, manifest.Bytes())
	if res.Outcome != sink.Delivered {
		s.dropClient()
	}
	return res
}

// send runs one transaction on cl.
func (s *Sink) send(ctx context.Context, cl *kgo.Client, e sink.Export, manifest []byte) sink.Result {
	rc, err := e.OpenItems()
	if err != nil {
		return local(sink.Retry, fmt.Errorf("open results.ndjson: %w", err))
	}
	defer rc.Close()
	if err := cl.BeginTransaction(); err != nil {
		return classify("begin transaction", err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	key := []byte(e.BatchID)
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 0, 64<<10), s.maxItem+1)
	var n int64
	for sc.Scan() {
		if n >= e.Items {
			s.abort(ctx, cl)
			// Retried, not failed: the dispatcher checked the file against
			// the manifest, so only a change since can cause it.
			return local(sink.Retry, fmt.Errorf("results.ndjson has more than the %d items the export counts", e.Items))
		}
		line := sc.Bytes()
		if len(line) == 0 || !json.Valid(line) {
			s.abort(ctx, cl)
			return local(sink.Failed, fmt.Errorf("line %d of results.ndjson is not a JSON item", n+1))
		}
		cl.Produce(pctx, &kgo.Record{Key: key, Value: bytes.Clone(line), Headers: []kgo.RecordHeader{
			{Key: HeaderBatchID, Value: key},
			{Key: HeaderIndex, Value: []byte(strconv.FormatInt(n, 10))},
			{Key: HeaderKind, Value: []byte(KindItem)},
		}}, promise)
		n++
		if err := failed(); err != nil {
			break
		}
	}
	if err := sc.Err(); err != nil {
		s.abort(ctx, cl)
		if errors.Is(err, bufio.ErrTooLong) {
			return local(sink.Failed, fmt.Errorf("line %d of results.ndjson is longer than %d bytes", n+1, s.maxItem))
		}
		return local(sink.Retry, fmt.Errorf("read results.ndjson: %w", err))
	}
	if err := failed(); err == nil && n != e.Items {
		s.abort(ctx, cl)
		return local(sink.Retry, fmt.Errorf("results.ndjson has %d items; the export counts %d", n, e.Items))
	}
	if failed() == nil {
		cl.Produce(pctx, &kgo.Record{Key: key, Value: manifest, Headers: []kgo.RecordHeader{
			{Key: HeaderBatchID, Value: key},
			{Key: HeaderKind, Value: []byte(KindManifest)},
		}}, promise)
	}
	if err := cl.Flush(pctx); err != nil {
		s.abort(ctx, cl)
		return classify("flush", err)
	}
	if err := failed(); err != nil {
		s.abort(ctx, cl)
		return classify("produce", err)
	}
	// The commit is not cut by a shutdown: a cancelled EndTxn leaves its
	// outcome unknown, and the batch would be sent again.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer ccancel()
	if err := cl.EndTransaction(cctx, kgo.TryCommit); err != nil {
		s.abort(ctx, cl)
		return classify("commit", err)
	}
	return sink.Result{Outcome: sink.Delivered}
}

// abort tries to abort the open transaction. Errors are ignored: the
// caller drops the producer, and its successor's initialisation makes the
// broker abort anything still open.
func (s *Sink) abort(ctx context.Context, cl *kgo.Client) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_ = cl.AbortBufferedRecords(actx)
	_ = cl.EndTransaction(actx, kgo.TryAbort)
}

// classify turns a producer error into an outcome: the broker's refusals
// that no retry can change (authorization, an unknown topic, a record too
// large) are Failed; everything else (timeouts, connections, fencing,
// coordinator moves, a commit whose outcome is unknown) is retried.
func classify(what string, err error) sink.Result {
	reason := what + ": " + err.Error()
	if len(reason) > 300 {
		reason = reason[:300]
	}
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return sink.Result{Outcome: sink.Failed, Kind: "authorization", Reason: reason}
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID), errors.Is(err, kerr.InvalidTopicException):
		return sink.Result{Outcome: sink.Failed, Kind: "unknown_topic", Reason: reason}
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return sink.Result{Outcome: sink.Failed, Kind: "too_large", Reason: reason}
	case errors.Is(err, context.Canceled):
		return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: reason}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		return sink.Result{Outcome: sink.Retry, Kind: "timeout", Reason: reason}
	}
	return sink.Result{Outcome: sink.Retry, Kind: "broker", Reason: reason}
}

func local(o sink.Outcome, err error) sink.Result {
	return sink.Result{Outcome: o, Kind: "local", Reason: err.Error()}
}

func cancelled(err error) sink.Result {
	return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "delivery interrupted: " + err.Error()}
}
