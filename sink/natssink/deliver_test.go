package natssink_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/natssink"
)

func newSink(t *testing.T, url string, timeout time.Duration) *natssink.Sink {
	t.Helper()
	s, err := natssink.New(natssink.Options{URL: url, PublishTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestMessagesInOrder: 250 items are 250 item messages in export order,
// byte-equal to the lines, then one manifest message; ids, headers and
// Progress marks (every 100 and the last) are as documented.
func TestMessagesInOrder(t *testing.T) {
	srv := startServer(t, nil)
	st := addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	items := cpfItems(250)
	e := writeExport(t, "b1", items, 0)
	p := &progress{}
	if res := s.Deliver(context.Background(), e, p); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	if got, want := p.recorded(), []int{100, 200, 251}; !slices.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	msgs := readStream(t, st)
	if len(msgs) != 251 {
		t.Fatalf("%d messages, want 251", len(msgs))
	}
	for i, m := range msgs[:250] {
		if m.id != "b1:"+strconv.Itoa(i) || m.batch != "b1" || m.kind != "item" || m.index != strconv.Itoa(i) {
			t.Fatalf("message %d: id %q batch %q kind %q index %q", i, m.id, m.batch, m.kind, m.index)
		}
		if string(m.data) != items[i] {
			t.Fatalf("message %d is not line %d of results.ndjson", i, i)
		}
	}
	last := msgs[250]
	if last.id != "b1:manifest" || last.kind != "manifest" || last.batch != "b1" || last.index != "" || !bytes.Equal(last.data, e.Manifest) {
		t.Fatalf("last message: id %q kind %q batch %q index %q data %s", last.id, last.kind, last.batch, last.index, last.data)
	}
}

// TestRefetchedVersionIDs: the Nth refetch's ids carry r<N>, so the
// stream keeps them even though the first version's ids are in its
// duplicate window.
func TestRefetchedVersionIDs(t *testing.T) {
	srv := startServer(t, nil)
	st := addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	for _, v := range []int{0, 2} {
		if res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(2), v), &progress{}); res.Outcome != sink.Delivered {
			t.Fatalf("version %d: Deliver = %+v", v, res)
		}
	}
	var ids []string
	for _, m := range readStream(t, st) {
		ids = append(ids, m.id)
	}
	if want := []string{"b:0", "b:1", "b:manifest", "b:r2:0", "b:r2:1", "b:r2:manifest"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
}

// TestEmptyBatchIsOneManifest: a batch without items is still announced.
func TestEmptyBatchIsOneManifest(t *testing.T) {
	srv := startServer(t, nil)
	st := addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	if res := s.Deliver(context.Background(), writeExport(t, "e", nil, 0), &progress{}); res.Outcome != sink.Delivered {
		t.Fatalf("Deliver = %+v", res)
	}
	if msgs := readStream(t, st); len(msgs) != 1 || msgs[0].id != "e:manifest" {
		t.Fatalf("messages %+v, want one e:manifest", msgs)
	}
}

// TestResumeAfterRecordedPrefix: a retry sends only what Progress does
// not record; the duplicate window absorbs a message acked but not
// recorded, so the stream holds each message once.
func TestResumeAfterRecordedPrefix(t *testing.T) {
	srv := startServer(t, nil)
	st := addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	items := cpfItems(150)
	e := writeExport(t, "b", items, 0)
	// A first run that reached the store only up to 100 but whose
	// messages up to 120 were acked (a crash between ack and record).
	first := writeExport(t, "b", items[:120], 0)
	first.Items = 150
	p := &progress{}
	if res := s.Deliver(context.Background(), first, p); res.Outcome != sink.Retry || res.Kind != "local" {
		t.Fatalf("short export: %+v, want retry/local", res)
	}
	if got := p.recorded(); !slices.Equal(got, []int{100, 120}) {
		t.Fatalf("marks %v, want [100 120] (the acked prefix is recorded on the way out)", got)
	}
	p = &progress{done: 100}
	if res := s.Deliver(context.Background(), e, p); res.Outcome != sink.Delivered {
		t.Fatalf("resume: %+v", res)
	}
	if got := p.recorded(); !slices.Equal(got, []int{151}) {
		t.Fatalf("marks %v, want [151]", got)
	}
	msgs := readStream(t, st)
	if len(msgs) != 151 {
		t.Fatalf("%d messages in the stream, want 151 (120 + 30 items + manifest)", len(msgs))
	}
	for i, m := range msgs[:150] {
		if string(m.data) != items[i] || m.id != "b:"+strconv.Itoa(i) {
			t.Fatalf("message %d: id %q, or data not line %d", i, m.id, i)
		}
	}
}

// TestDuplicateWindowDedup: a whole redelivery (Progress lost) stores
// nothing new within the window.
func TestDuplicateWindowDedup(t *testing.T) {
	srv := startServer(t, nil)
	st := addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	e := writeExport(t, "b", cpfItems(30), 0)
	for range 2 {
		if res := s.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Delivered {
			t.Fatalf("Deliver = %+v", res)
		}
	}
	if n := len(readStream(t, st)); n != 31 {
		t.Fatalf("%d messages, want 31", n)
	}
}

// TestPermissionViolationFails: a subject the account may not publish on
// is a permanent failure, reported at once (not after the timeout).
func TestPermissionViolationFails(t *testing.T) {
	srv := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "batchhook", Password: "unused", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Deny: []string{natssink.DefaultSubject}},
		}}}
		o.NoAuthUser = "batchhook"
	})
	s := newSink(t, srv.ClientURL(), 20*time.Second)
	start := time.Now()
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(3), 0), &progress{})
	if res.Outcome != sink.Failed || res.Kind != "permission" {
		t.Fatalf("Deliver = %+v, want failed/permission", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v: the violation was not noticed before the timeout", d)
	}
	noItem(t, res)
}

// TestOverMaxPayloadFails: an item larger than the server's max payload
// can never be stored.
func TestOverMaxPayloadFails(t *testing.T) {
	srv := startServer(t, func(o *server.Options) { o.MaxPayload = 1024 })
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	items := []string{cpfItem(0), `{"cpf":"529.982.247-25","pad":"` + strings.Repeat("x", 2000) + `"}`}
	p := &progress{}
	res := s.Deliver(context.Background(), writeExport(t, "b", items, 0), p)
	if res.Outcome != sink.Failed || res.Kind != "too_large" {
		t.Fatalf("Deliver = %+v, want failed/too_large", res)
	}
	if got := p.recorded(); !slices.Equal(got, []int{1}) {
		t.Fatalf("marks %v, want [1]", got)
	}
	noItem(t, res)
}

// TestServerDownRetries: no server, or a server without the stream, is a
// retry; once the server is back the same sink delivers.
func TestServerDownRetries(t *testing.T) {
	srv := startServer(t, nil)
	url := srv.ClientURL()
	s := newSink(t, url, 2*time.Second)
	e := writeExport(t, "b", cpfItems(5), 0)
	if res := s.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Retry || res.Kind != "no_stream" {
		t.Fatalf("without a stream: %+v, want retry/no_stream", res)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	res := s.Deliver(context.Background(), e, &progress{})
	if res.Outcome != sink.Retry {
		t.Fatalf("server down: %+v, want retry", res)
	}
	noItem(t, res)
	s2 := newSink(t, url, time.Second)
	if res := s2.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Retry || res.Kind != "connection" {
		t.Fatalf("fresh sink, server down: %+v, want retry/connection", res)
	}
}

// TestCancelledRetries: a cancelled context (shutdown) answers Retry.
func TestCancelledRetries(t *testing.T) {
	srv := startServer(t, nil)
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := s.Deliver(ctx, writeExport(t, "b", cpfItems(5), 0), &progress{}); res.Outcome != sink.Retry {
		t.Fatalf("Deliver = %+v, want retry", res)
	}
}

// TestMarkErrorRetries: a Progress that cannot record is a retry.
func TestMarkErrorRetries(t *testing.T) {
	srv := startServer(t, nil)
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	res := s.Deliver(context.Background(), writeExport(t, "b", cpfItems(5), 0), &progress{failMark: true})
	if res.Outcome != sink.Retry || !strings.Contains(res.Reason, "record message 6 of 6") {
		t.Fatalf("Deliver = %+v, want retry naming message 6", res)
	}
}

func noItem(t *testing.T, res sink.Result) {
	t.Helper()
	if strings.Contains(res.Reason, "529.982") || strings.Contains(res.Reason, "cpf") {
		t.Fatalf("Reason %q holds an item", res.Reason)
	}
}

// TestTokenAuth: the token authenticates; a wrong one is a retry (the
// operator fixes it and the next attempt goes through), and the Reason
// does not show the token.
func TestTokenAuth(t *testing.T) {
	srv := startServer(t, func(o *server.Options) { o.Authorization = "tok-right" })
	nc, err := nats.Connect(srv.ClientURL(), nats.Token("tok-right"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "R", Subjects: []string{natssink.DefaultSubject}})
	if err != nil {
		t.Fatal(err)
	}
	e := writeExport(t, "b", cpfItems(3), 0)
	bad, err := natssink.New(natssink.Options{URL: srv.ClientURL(), Token: "tok-wrong", PublishTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	res := bad.Deliver(context.Background(), e, &progress{})
	if res.Outcome != sink.Retry || strings.Contains(res.Reason, "tok-wrong") {
		t.Fatalf("wrong token: %+v, want a retry without the token", res)
	}
	good, err := natssink.New(natssink.Options{URL: srv.ClientURL(), Token: "tok-right"})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if res := good.Deliver(context.Background(), e, &progress{}); res.Outcome != sink.Delivered {
		t.Fatalf("right token: %+v", res)
	}
	if n := len(readStream(t, st)); n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
}

// TestOverMaxPayloadWithHeadersFails: an item that fits the max payload
// alone but not with its headers is refused by the client library
// (nats.ErrMaxPayload) and fails the delivery.
func TestOverMaxPayloadWithHeadersFails(t *testing.T) {
	srv := startServer(t, func(o *server.Options) { o.MaxPayload = 1024 })
	addStream(t, srv.ClientURL(), natssink.DefaultSubject, time.Minute)
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	item := `{"cpf":"529.982.247-25","pad":"` + strings.Repeat("x", 1000-33) + `"}`
	if len(item) != 1000 {
		t.Fatalf("item of %d bytes", len(item))
	}
	res := s.Deliver(context.Background(), writeExport(t, "b", []string{item}, 0), &progress{})
	if res.Outcome != sink.Failed || res.Kind != "too_large" || !strings.Contains(res.Reason, "max payload") {
		t.Fatalf("Deliver = %+v, want failed/too_large (max payload)", res)
	}
	noItem(t, res)
}

// TestOverStreamMaxMsgSizeFails: the stream's own size limit is as final.
func TestOverStreamMaxMsgSizeFails(t *testing.T) {
	srv := startServer(t, nil)
	js := jsOf(t, srv.ClientURL())
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "R", Subjects: []string{natssink.DefaultSubject}, MaxMsgSize: 300}); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, srv.ClientURL(), 5*time.Second)
	items := []string{cpfItem(0), `{"cpf":"529.982.247-25","pad":"` + strings.Repeat("x", 400) + `"}`}
	res := s.Deliver(context.Background(), writeExport(t, "b", items, 0), &progress{})
	if res.Outcome != sink.Failed || res.Kind != "too_large" || !strings.Contains(res.Reason, "stream's max message size") {
		t.Fatalf("Deliver = %+v, want failed/too_large (stream)", res)
	}
	noItem(t, res)
}
