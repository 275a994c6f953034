package natssink

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/sink"
)

// Deliver publishes the messages of e that p does not already record,
// in order: message k (1-based) is item k-1, and message Items+1 is the
// manifest. It stops at the first publish that is not acked.
func (s *Sink) Deliver(ctx context.Context, e sink.Export, p sink.Progress) sink.Result {
	if !headerSafe(e.BatchID) {
		return local(sink.Failed, errors.New("the batch id cannot go in a header"))
	}
	if e.Items < 0 {
		return local(sink.Failed, errors.New("the export counts a negative number of items"))
	}
	total := int(e.Items) + 1
	done := max(p.Done(), 0)
	if done >= total {
		return sink.Result{Outcome: sink.Delivered}
	}
	nc, js, err := s.conn()
	if err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "connection", Reason: err.Error()}
	}
	rc, err := e.OpenItems()
	if err != nil {
		return local(sink.Retry, fmt.Errorf("open results.ndjson: %w", err))
	}
	defer rc.Close()
	it := newItems(rc, int(max(nc.MaxPayload(), 1)))
	for i := 0; i < min(done, int(e.Items)); i++ {
		if _, err := it.next(); err != nil {
			return itemsFailed(err)
		}
	}
	marked := done
	mark := func(n int) error {
		if n == marked {
			return nil
		}
		if err := p.Mark(n); err != nil {
			return err
		}
		marked = n
		return nil
	}
	for k := done + 1; k <= total; k++ {
		if err := ctx.Err(); err != nil {
			_ = mark(k - 1) // best effort: the Msg-Id dedup covers the rest
			return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: "delivery interrupted: " + err.Error()}
		}
		m := &nats.Msg{Subject: s.o.Subject, Header: nats.Header{}}
		m.Header.Set(HeaderBatchID, e.BatchID)
		var id string
		if k <= int(e.Items) {
			item, err := it.next()
			if err != nil {
				_ = mark(k - 1)
				return itemsFailed(err)
			}
			m.Data = item
			m.Header.Set(HeaderKind, "item")
			m.Header.Set(HeaderIndex, strconv.Itoa(k-1))
			id = MessageID(e.BatchID, e.Version, strconv.Itoa(k-1))
		} else {
			if err := it.atEnd(); err != nil {
				_ = mark(k - 1)
				return itemsFailed(err)
			}
			m.Data = e.Manifest
			m.Header.Set(HeaderKind, "manifest")
			id = MessageID(e.BatchID, e.Version, "manifest")
		}
		if err := s.publish(ctx, js, m, id); err != nil {
			_ = mark(k - 1)
			return classify(k, total, err)
		}
		if k%MarkEvery == 0 || k == total {
			if err := mark(k); err != nil {
				return local(sink.Retry, fmt.Errorf("record message %d of %d: %w", k, total, err))
			}
		}
	}
	return sink.Result{Outcome: sink.Delivered}
}

// classify turns a failed publish into a Result (DECISIONS 30): a
// permissions violation and a message over the server's (or the
// stream's) size limit are permanent; everything else is retried. The
// Reason holds the error of the library, which names the subject at most,
// never a payload.
func classify(k, total int, err error) sink.Result {
	where := fmt.Sprintf("message %d of %d: ", k, total)
	var api *jetstream.APIError
	switch {
	case errors.Is(err, errPermission), errors.Is(err, nats.ErrPermissionViolation):
		return sink.Result{Outcome: sink.Failed, Kind: "permission", Reason: where + "the server refused to let batchhook publish on the subject (permissions violation)"}
	case errors.Is(err, nats.ErrMaxPayload):
		return sink.Result{Outcome: sink.Failed, Kind: "too_large", Reason: where + "larger than the server's max payload"}
	case errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
		return sink.Result{Outcome: sink.Failed, Kind: "too_large", Reason: where + "larger than the stream's max message size"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return sink.Result{Outcome: sink.Retry, Kind: "timeout", Reason: where + "no ack within the publish timeout"}
	case errors.Is(err, context.Canceled):
		return sink.Result{Outcome: sink.Retry, Kind: "cancelled", Reason: where + "delivery interrupted"}
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return sink.Result{Outcome: sink.Retry, Kind: "no_stream", Reason: where + "no stream answered for the subject"}
	case errors.As(err, &api):
		return sink.Result{Outcome: sink.Retry, Kind: "jetstream", Reason: where + err.Error()}
	}
	return sink.Result{Outcome: sink.Retry, Kind: "connection", Reason: where + err.Error()}
}

// headerSafe reports whether v can be sent in a header value as it is.
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return v != ""
}

func local(o sink.Outcome, err error) sink.Result {
	return sink.Result{Outcome: o, Kind: "local", Reason: err.Error()}
}

// itemsFailed: a read error may pass (Retry); a malformed export will not.
func itemsFailed(err error) sink.Result {
	if errors.Is(err, errTooLong) {
		return sink.Result{Outcome: sink.Failed, Kind: "too_large", Reason: err.Error()}
	}
	// A count that disagrees with the manifest is retried (the file
	// changed since the dispatcher checked it): see httpsink.
	return local(sink.Retry, err)
}
