package receiver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// benchWriter is a ResponseWriter that keeps the status and drops the body.
type benchWriter struct {
	header http.Header
	code   int
}

func (w *benchWriter) Header() http.Header         { return w.header }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }

// benchBody is a request body that can be rewound for the next request.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// ackBench drives the batch webhook's handler in process (no sockets, the
// same *http.Request rewound each time) against a real store, with the
// logger at warn as in production, so what is measured is the handler.
type ackBench struct {
	handler http.Handler
	req     *http.Request
	body    benchBody
	w       benchWriter
	sigKey  string // the signature header's canonical name
}

func newAckBench(b *testing.B) *ackBench {
	st, err := store.Open(b.TempDir(), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	srv, err := New(Options{
		Path: testPath, MaxBodyBytes: 64 << 10, Secret: func() []byte { return []byte(testSecret) },
		Store: st, Logger: zerolog.New(io.Discard).Level(zerolog.WarnLevel).With().Timestamp().Str("component", "receiver").Logger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return newAckClient(b, srv.Handler())
}

// newAckClient is another sender to the same handler.
func newAckClient(b *testing.B, h http.Handler) *ackBench {
	a := &ackBench{handler: h, w: benchWriter{header: http.Header{}}, sigKey: http.CanonicalHeaderKey(signature.Header)}
	var err error
	a.req, err = http.NewRequest(http.MethodPost, "http://127.0.0.1"+testPath, &a.body)
	if err != nil {
		b.Fatal(err)
	}
	a.req.RemoteAddr = "127.0.0.1:40000"
	a.req.Header.Set("Content-Type", "application/json")
	a.req.Header.Set("X-Service-Attempt", "1")
	return a
}

// post sends body with its signature (a header value built beforehand).
func (a *ackBench) post(b *testing.B, body []byte, sig []string, want int) {
	a.body.Reset(body)
	a.req.ContentLength = int64(len(body))
	a.req.Header[a.sigKey] = sig
	clear(a.w.header)
	a.w.code = 0
	a.handler.ServeHTTP(&a.w, a.req)
	if a.w.code != want {
		b.Errorf("status %d, want %d", a.w.code, want) // not Fatal: RunParallel's goroutines call it
	}
}

func benchBatch(id string) []byte {
	return fmt.Appendf(nil, `{"event":"batch.completed","batch_id":%q,"status":"completed","total_requested":1000,`+
		`"total_found":987,"total_not_found":13,"completed_at":"2026-11-22T10:00:00Z"}`, id)
}

// reportCPU adds cpu-ns/op: the process's CPU time per request (the
// handler, the store's writer, the GC), what the load figures count per
// ack (DECISIONS 27), where ns/op of a durable ack is mostly waiting for the disk.
func reportCPU(b *testing.B, run func()) {
	before, ok := processCPU()
	run()
	after, _ := processCPU()
	if ok {
		b.ReportMetric(float64(after-before)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkAck: a durable ack of a new batch (one fsynced commit each, so
// ns/op is mostly the disk's), and the reply to a batch already recorded
// (the provider's retry: no write, so ns/op is the handler's CPU).
func BenchmarkAck(b *testing.B) {
	b.Run("accepted", func(b *testing.B) {
		a := newAckBench(b)
		bodies, sigs := make([][]byte, b.N), make([][]string, b.N)
		for i := range bodies {
			bodies[i] = benchBatch(fmt.Sprintf("01HF8Z6Q3V4X5Y6Z7A%08d", i))
			sigs[i] = []string{signature.Sign([]byte(testSecret), bodies[i])}
		}
		b.ReportAllocs()
		b.ResetTimer()
		reportCPU(b, func() {
			for i := range b.N {
				a.post(b, bodies[i], sigs[i], http.StatusOK)
			}
		})
	})
	// 64 senders at once, as under wrk -c64: the store commits them in
	// groups, so the fsync is shared and cpu-ns/op is closer to the
	// handler's own share.
	b.Run("accepted-64", func(b *testing.B) {
		a := newAckBench(b)
		bodies, sigs := make([][]byte, b.N), make([][]string, b.N)
		for i := range bodies {
			bodies[i] = benchBatch(fmt.Sprintf("01HF8Z6Q3V4X5Y6Z7A%08d", i))
			sigs[i] = []string{signature.Sign([]byte(testSecret), bodies[i])}
		}
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(32) // × GOMAXPROCS (2 here) = 64 senders
		b.ResetTimer()
		reportCPU(b, func() {
			b.RunParallel(func(pb *testing.PB) {
				c := newAckClient(b, a.handler)
				for pb.Next() {
					i := next.Add(1) - 1
					c.post(b, bodies[i], sigs[i], http.StatusOK)
				}
			})
		})
	})
	b.Run("duplicate", func(b *testing.B) {
		a := newAckBench(b)
		body := benchBatch("01HF8Z6Q3V4X5Y6Z7A8B9C0D1E")
		sig := []string{signature.Sign([]byte(testSecret), body)}
		a.post(b, body, sig, http.StatusOK)
		b.ReportAllocs()
		b.ResetTimer()
		reportCPU(b, func() {
			for range b.N {
				a.post(b, body, sig, http.StatusOK)
			}
		})
	})
}
