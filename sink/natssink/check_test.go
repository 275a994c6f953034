package natssink_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink/natssink"
)

// TestCheckMissingStream: a reachable server without a stream for the
// subject is ErrNoStream, naming the subject; once an operator adds the
// stream the check passes.
func TestCheckMissingStream(t *testing.T) {
	srv := startServer(t, nil)
	s, err := natssink.New(natssink.Options{URL: srv.ClientURL(), Subject: "acme.cpf.results"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Check(ctx)
	if !errors.Is(err, natssink.ErrNoStream) || !strings.Contains(err.Error(), "acme.cpf.results") {
		t.Fatalf("Check = %v, want ErrNoStream naming the subject", err)
	}
	addStream(t, srv.ClientURL(), "acme.cpf.results", time.Minute)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check with the stream = %v", err)
	}
}

// TestCheckCreatesStream: with CreateStream the check makes a file
// stream with the duplicate window.
func TestCheckCreatesStream(t *testing.T) {
	srv := startServer(t, nil)
	s, err := natssink.New(natssink.Options{URL: srv.ClientURL(), CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v", err)
	}
	st, err := jsOf(t, srv.ClientURL()).Stream(context.Background(), "BATCHHOOK_RESULTS")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.Storage.String() != "File" || cfg.Duplicates != natssink.DuplicateWindow || len(cfg.Subjects) != 1 || cfg.Subjects[0] != natssink.DefaultSubject {
		t.Fatalf("stream config: storage %v duplicates %v subjects %v", cfg.Storage, cfg.Duplicates, cfg.Subjects)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("second Check = %v", err)
	}
}

// TestCheckUnreachable: nobody listening is ErrUnreachable, not
// ErrNoStream: the daemon starts and its deliveries retry.
func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := natssink.New(natssink.Options{URL: "nats://" + addr, PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	err = s.Check(context.Background())
	if !errors.Is(err, natssink.ErrUnreachable) || errors.Is(err, natssink.ErrNoStream) {
		t.Fatalf("Check = %v, want ErrUnreachable", err)
	}
}

// TestNewRejects: each bad option is named; a URL with credentials is
// refused without showing them.
func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		o    natssink.Options
		want string
	}{
		{natssink.Options{}, "URL is required"},
		{natssink.Options{URL: "nats://user:s3cret@h:4222"}, "userinfo"},
		{natssink.Options{URL: "http://h:4222"}, "nats://"},
		{natssink.Options{URL: "nats://h:4222", Subject: "a.*"}, "not a literal subject"},
		{natssink.Options{URL: "nats://h:4222", PublishTimeout: -time.Second}, "PublishTimeout"},
	} {
		_, err := natssink.New(tc.o)
		if !errors.Is(err, natssink.ErrOptions) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%+v) = %v, want ErrOptions mentioning %q", tc.o, err, tc.want)
		}
	}
}

// TestCheckWildcardStream: a stream bound through a wildcard counts.
func TestCheckWildcardStream(t *testing.T) {
	srv := startServer(t, nil)
	addStream(t, srv.ClientURL(), "batchhook.>", time.Minute)
	s, err := natssink.New(natssink.Options{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v", err)
	}
}
