package lookupsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is one simulated provider account: its API, its batches, the
// timers that finish them and the goroutines that deliver their webhooks.
// It owns all of them, and Close stops all of them.
type Server struct {
	opts   Options
	client *http.Client // webhook deliveries

	// ctx ends at Close: it cancels deliveries, their backoff waits and
	// slow pages (it is every request's base context).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // finalizations, deliveries and the HTTP server

	mu       sync.Mutex
	batches  map[string]*batch
	txs      map[string]*transaction // by transaction id
	byProc   map[string]*transaction // deposits, by processor_transaction_id
	merchant string                  // merchant_id of this simulated account
	qrImage  string                  // the data URI every qrcode_image carries
	seq      int                     // the next submission's sequence number
	window   []time.Time             // accepted submissions in the last 60 s (Options.Now)
	inFlight int
	faults   Faults
	stats    Stats
	closed   bool
	srv      *http.Server
	addr     net.Addr

	closeOnce sync.Once
	closeDone chan struct{}
	closeErr  error
}

// Stats counts what the simulator did, so tests can prove a fault was
// actually exercised or that a client did not fetch more than it should.
type Stats struct {
	Submitted         int // accepted submissions
	RateLimited       int // submissions refused by a limit
	PagesServed       int // 200 pages of final batches
	Polls             int // 200 answers for batches still processing
	GETFaults         int // injected FailStatus answers
	Dropped           int // connections dropped by DropGETs
	Deliveries        int // webhook attempts, duplicates included
	DeliveriesAcked   int // attempts answered 2xx
	DeliveryFailures  int // attempts that failed (non-2xx, timeout, error)
	DeliveriesGivenUp int // batches whose MaxAttempts all failed

	GatewayRequests          int // requests to the gateway's POST /api/pix/charge and /api/pix/pay, refused ones included
	TransactionsCreated      int // deposits and withdrawals created
	Simulations              int // requests to the sandbox's simulation URLs, refused ones included
	PaymentDeliveries        int // payment webhook attempts, duplicates included
	PaymentDeliveriesAcked   int // payment attempts answered 2xx
	PaymentDeliveryFailures  int // payment attempts that failed
	PaymentDeliveriesGivenUp int // payment events whose MaxAttempts all failed
}

// New checks opts, applies the defaults and returns a Server that accepts
// submissions at once (in process, or over HTTP through Handler or Start).
func New(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // deliveries go straight to the receiver
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		opts: opts,
		client: &http.Client{
			Transport: transport,
			// A redirect is a non-2xx reply, so a failed attempt.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		ctx:       ctx,
		cancel:    cancel,
		batches:   make(map[string]*batch),
		txs:       make(map[string]*transaction),
		byProc:    make(map[string]*transaction),
		merchant:  newUUID(),
		qrImage:   qrcodeDataURI(),
		faults:    opts.Faults,
		closeDone: make(chan struct{}),
	}, nil
}

// Handler returns the provider's HTTP API, for use with Start or httptest.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/batches", s.handleSubmit)
	mux.HandleFunc("GET /api/v1/batches/{batch_id}", s.handlePage)
	s.gatewayRoutes(mux)
	return mux
}

// Start binds addr before returning, so "127.0.0.1:0" works and "address
// in use" is an error here, then serves in the background until Close.
func (s *Server) Start(addr string) (net.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.srv != nil {
		return nil, errors.New("lookupsim: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lookupsim: listen on %s: %w", addr, err)
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          log.New(logfWriter(s.opts.Logf), "lookupsim: http: ", 0),
	}
	s.addr = ln.Addr()
	s.wg.Add(1)
	go func(srv *http.Server) {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logf("lookupsim: serve: %v", err)
		}
	}(s.srv)
	s.opts.Logf("lookupsim: listening on http://%s", s.addr)
	return s.addr, nil
}

// URL is the base address (http://host:port) after Start, "" before.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == nil {
		return ""
	}
	return "http://" + s.addr.String()
}

// Close stops taking requests, stops the processing timers, cancels
// deliveries and waits for every goroutine the Server started, bounded by
// ctx. Batches still in flight stay so. Calling it again returns the first
// call's result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		defer close(s.closeDone)
		s.closeErr = s.shutdown(ctx)
	})
	select {
	case <-s.closeDone:
		return s.closeErr
	case <-ctx.Done():
		return fmt.Errorf("lookupsim: close: %w", ctx.Err())
	}
}

func (s *Server) shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, b := range s.batches {
		if b.timer != nil {
			b.timer.Stop()
		}
	}
	srv := s.srv
	s.mu.Unlock()
	s.cancel()

	var errs []error
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("lookupsim: shut down http: %w", err))
			_ = srv.Close()
		}
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("lookupsim: wait for deliveries: %w", ctx.Err()))
	}
	s.client.CloseIdleConnections()
	return errors.Join(errs...)
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Results returns every item of a final batch, exactly the bytes its pages
// serve (compact JSON), so tests can compare an export byte for byte. A
// failed batch gives an empty slice and true; an unknown or unfinished
// batch gives false.
func (s *Server) Results(batchID string) ([]json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[batchID]
	if !ok || b.status == StatusProcessing {
		return nil, false
	}
	out := make([]json.RawMessage, len(b.items))
	for i, it := range b.items {
		out[i] = append(json.RawMessage(nil), it...)
	}
	return out, true
}

// Notification returns the exact webhook body of a final batch, built even
// when no webhook is sent, so tests can replay or forge around it.
func (s *Server) Notification(batchID string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[batchID]
	if !ok || b.status == StatusProcessing {
		return nil, false
	}
	return append([]byte(nil), b.notification...), true
}

// Status returns a batch's status: "processing" or its final status.
func (s *Server) Status(batchID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[batchID]
	if !ok {
		return "", false
	}
	return b.status, true
}

// WaitFinal blocks until the batch is final, so tests wait on an event
// rather than sleep. It returns ErrNotFound for an unknown id and ctx's
// error when ctx ends first.
func (s *Server) WaitFinal(ctx context.Context, batchID string) error {
	s.mu.Lock()
	b, ok := s.batches[batchID]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("wait for batch %s: %w", batchID, ErrNotFound)
	}
	select {
	case <-b.final:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for batch %s: %w", batchID, ctx.Err())
	}
}

// logfWriter lets net/http's own error log reach Options.Logf.
type logfWriter func(format string, args ...any)

func (f logfWriter) Write(p []byte) (int, error) {
	f("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
