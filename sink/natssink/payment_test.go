package natssink_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/natssink"
)

func testPayment(t *testing.T, seq uint64, note string) sink.Payment {
	t.Helper()
	at := time.Date(2026, 11, 24, 12, 0, int(seq), 0, time.UTC)
	line, err := sink.PaymentLine(seq, at, "transaction.paid", 1, []byte(fmt.Sprintf(`{"transaction":{"id":"tx-%d","note":%q}}`, seq, note)))
	if err != nil {
		t.Fatal(err)
	}
	return sink.Payment{Seq: seq, ReceivedAt: at, Event: "transaction.paid", Attempt: 1, TransactionID: fmt.Sprintf("tx-%d", seq), Line: line}
}

func paymentsSink(t *testing.T, url string) *natssink.Sink {
	t.Helper()
	s, err := natssink.New(natssink.Options{URL: url, PublishTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestPaymentsPublishedInOrderAndDeduplicated: each event is one message on
// the payments subject with Nats-Msg-Id payment:<seq>, its line as payload;
// a run sent again (a crash before the record) is stored once.
func TestPaymentsPublishedInOrderAndDeduplicated(t *testing.T) {
	srv := startServer(t, nil)
	js := jsOf(t, srv.ClientURL())
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "PAYMENTS", Subjects: []string{natssink.DefaultPaymentsSubject},
		Storage: jetstream.FileStorage, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := paymentsSink(t, srv.ClientURL())
	run := []sink.Payment{testPayment(t, 1, "a"), testPayment(t, 2, "b"), testPayment(t, 3, "c")}
	for range 2 {
		if done, res := s.DeliverPayments(context.Background(), run); done != 3 || res.Outcome != sink.Delivered {
			t.Fatalf("done %d %+v", done, res)
		}
	}
	ctx := context.Background()
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("stream holds %v messages (%v), want 3", info.State.Msgs, err)
	}
	for i := uint64(1); i <= 3; i++ {
		m, err := st.GetMsg(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		p := run[i-1]
		if m.Subject != natssink.DefaultPaymentsSubject || m.Header.Get("Nats-Msg-Id") != fmt.Sprintf("payment:%d", p.Seq) ||
			m.Header.Get(natssink.HeaderKind) != "payment" || m.Header.Get(natssink.HeaderSeq) != fmt.Sprint(p.Seq) ||
			m.Header.Get(natssink.HeaderEvent) != "transaction.paid" || string(m.Data) != string(p.Line) {
			t.Errorf("message %d: subject %s headers %v data %s", i, m.Subject, m.Header, m.Data)
		}
	}
}

// TestCheckPayments: the payments subject needs its own stream; the check
// names it.
func TestCheckPayments(t *testing.T) {
	srv := startServer(t, nil)
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := paymentsSink(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check = %v", err)
	}
	err := s.CheckPayments(ctx)
	if !errors.Is(err, natssink.ErrNoStream) || !strings.Contains(err.Error(), natssink.DefaultPaymentsSubject) {
		t.Fatalf("CheckPayments = %v, want ErrNoStream naming %s", err, natssink.DefaultPaymentsSubject)
	}
}

// TestPaymentPermissionAndSizeFail: a denied payments subject and an event
// over the max payload are permanent; the events before the refused one
// are reported done.
func TestPaymentPermissionAndSizeFail(t *testing.T) {
	srv := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "batchhook", Password: "unused", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Deny: []string{natssink.DefaultPaymentsSubject}},
		}}}
		o.NoAuthUser = "batchhook"
	})
	start := time.Now()
	done, res := paymentsSink(t, srv.ClientURL()).DeliverPayments(context.Background(), []sink.Payment{testPayment(t, 1, "")})
	if done != 0 || res.Outcome != sink.Failed || res.Kind != "permission" || time.Since(start) > 4*time.Second {
		t.Fatalf("denied subject: done %d %+v after %v", done, res, time.Since(start))
	}

	srv = startServer(t, func(o *server.Options) { o.MaxPayload = 1024 })
	if _, err := jsOf(t, srv.ClientURL()).CreateStream(context.Background(), jetstream.StreamConfig{Name: "PAYMENTS",
		Subjects: []string{natssink.DefaultPaymentsSubject}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	run := []sink.Payment{testPayment(t, 1, ""), testPayment(t, 2, strings.Repeat("x", 2000)), testPayment(t, 3, "")}
	done, res = paymentsSink(t, srv.ClientURL()).DeliverPayments(context.Background(), run)
	if done != 1 || res.Outcome != sink.Failed || res.Kind != "too_large" || strings.Contains(res.Reason, "xxxx") {
		t.Fatalf("oversized event: done %d %+v", done, res)
	}
}
