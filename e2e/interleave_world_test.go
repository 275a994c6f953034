package e2e

// The world of one TestInterleave seed: the simulator behind a proxy that
// can serve a batch under another id, the recording http receiver whose
// answers the schedule switches, a NATS JetStream server that can be
// stopped and started again on its port, and the daemon with its admin
// API. Everything random comes from the world's PRNG.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

// interleaveConfig is the daemon's configuration for one seed.
type interleaveConfig struct {
	withFile                         bool // file in SINKS: without it an export goes once every sink has it
	maxItems, pageLimit, sinkWorkers int
	exportRet, recordRet, purgeEvery string
	maxOps                           int
}

func chooseConfig(r *rand.Rand) interleaveConfig {
	return interleaveConfig{
		withFile: r.IntN(4) != 0, maxItems: 2 + r.IntN(6), pageLimit: 4 + r.IntN(12), sinkWorkers: 1 + r.IntN(2),
		exportRet:  []string{"0", "3s", "6s"}[r.IntN(3)],
		recordRet:  []string{"0", "5s"}[r.IntN(2)],
		purgeEvery: []string{"250ms", "1s"}[r.IntN(2)],
		maxOps:     35 + r.IntN(20),
	}
}

func (c interleaveConfig) String() string {
	sinks := "http,nats"
	if c.withFile {
		sinks = "file," + sinks
	}
	return fmt.Sprintf("sinks=%s http_max_items=%d page_limit=%d sink_workers=%d export_retention=%s record_retention=%s purge_interval=%s max_ops=%d",
		sinks, c.maxItems, c.pageLimit, c.sinkWorkers, c.exportRet, c.recordRet, c.purgeEvery, c.maxOps)
}

// How the http receiver answers a verified request.
const (
	httpAccept int32 = iota
	httpSlow         // accepts 80 ms late: a part stays in flight a while
	httpFlaky        // every third request 503: deliveries stop part-way
	http503
	httpHang // until the daemon gives up (HTTP_SINK_TIMEOUT) or goes away
)

const (
	ilToken       = "interleave-admin-token"
	ilSinkTimeout = 700 * time.Millisecond
)

// ilBatch is one batch the schedule made at the simulator.
type ilBatch struct {
	id, simID string
	sibling   string // for an id "<X>:r<N>", the batch X whose refetch N would share its message ids
	cpfs      []string
	note      []byte // the signed notification, for replays
	acked     bool   // the daemon answered 2xx
}

// ilErasure is one erasure the daemon recorded, and when the test knew it
// was done (its reply, or the restart that finished it).
type ilErasure struct {
	cpf         string
	id          string
	done        time.Time
	unrewritten []string
	// listed are the "batch sink" pairs the erasure's record says had the
	// data (delivered or may_have_received).
	listed map[string]bool
}

type world struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	cfg  interleaveConfig

	s       *setup
	prov    *providerProxy
	recv    *demo.Receiver
	mode    atomic.Int32
	open    atomic.Int32 // http requests being answered
	served  atomic.Int64 // http requests answered
	release chan struct{}
	nats    *natsBox
	gate    *ackGate // the daemon's way to NATS, which can be frozen
	tap     *natsTap
	d       *daemonProc
	procs   []*daemonProc

	pool     []string
	batches  []*ilBatch
	byID     map[string]*ilBatch
	erasures []ilErasure
	erased   map[string]bool
	began    time.Time
	schedule []string
	fig      seedFigures
	viol     []violation
	reported int // violations already reported

	pc *pcState // TestPowerLoss's part of the world; nil in TestInterleave
}

func newWorld(t *testing.T, seed uint64) *world {
	return newWorldWith(t, seed, nil)
}

// newWorldWith is newWorld with prepare called once the far ends and the
// daemon's environment are ready, before the daemon first starts:
// TestPowerLoss moves DATA_DIR onto its file system there and adds sinks.
func newWorldWith(t *testing.T, seed uint64, prepare func(*world)) *world {
	w := &world{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byID: map[string]*ilBatch{}, erased: map[string]bool{}, began: time.Now(), release: make(chan struct{}),
		fig: seedFigures{ops: map[string]int{}}}
	w.cfg = chooseConfig(w.rng)
	w.pool = lookupsim.SampleCPFs(90, int64(seed%1_000_000))
	// The far ends first: their cleanups then run after the daemon's kill.
	secret := newWHSecret(t)
	recv, err := demo.NewReceiver(secret, w.answer)
	if err != nil {
		t.Fatal(err)
	}
	w.recv = recv
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	t.Cleanup(func() { close(w.release) })
	w.nats = newNATSBox(t)
	_, js := natsJS(t, w.nats.url())
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "RESULTS", Subjects: []string{e2eSubject},
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	w.tap = tapNATS(t, w.nats.url())
	w.gate = newAckGate(t, strings.TrimPrefix(w.nats.url(), "nats://"))

	w.s = newSetup(t, lookupsim.Options{ProcessingDelay: 20 * time.Millisecond,
		SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited,
		Outcome: lookupsim.Cycle("completed", "completed", "partial", "expired", "completed", "failed"),
		Faults:  lookupsim.Faults{DropNotifications: true}}) // the schedule posts every notification itself
	t.Cleanup(w.unlockExports) // before the temporary directories go
	w.prov = &providerProxy{target: w.s.sim.URL(), alias: map[string]string{}}
	prov := httptest.NewServer(w.prov)
	t.Cleanup(prov.Close)

	sinks := "http,nats"
	if w.cfg.withFile {
		sinks = "file," + sinks
	}
	for k, v := range map[string]string{
		"API_BASE_URL": prov.URL, "SINKS": sinks, "ADMIN_TOKEN": ilToken, "LOG_LEVEL": "info",
		"HTTP_SINK_URL": hook.URL + "/hooks/interleave", "HTTP_SINK_SECRET": secret,
		"HTTP_SINK_MAX_ITEMS": strconv.Itoa(w.cfg.maxItems), "HTTP_SINK_TIMEOUT": ilSinkTimeout.String(),
		"NATS_URL": w.gate.url(), "NATS_PUBLISH_TIMEOUT": "1s",
		"SINK_WORKERS": strconv.Itoa(w.cfg.sinkWorkers), "FETCH_WORKERS": "2", "PAGE_LIMIT": strconv.Itoa(w.cfg.pageLimit),
		"BACKOFF_BASE": "50ms", "BACKOFF_MAX": "400ms",
		"EXPORT_RETENTION": w.cfg.exportRet, "RECORD_RETENTION": w.cfg.recordRet, "PURGE_INTERVAL": w.cfg.purgeEvery,
	} {
		w.s.env["BATCHHOOK_"+k] = v
	}
	if prepare != nil {
		prepare(w)
	}
	w.startDaemon()
	return w
}

// answer is the receiver's answer to a verified request, as the schedule
// last set it.
func (w *world) answer(ctx context.Context, _ demo.Message) int {
	w.open.Add(1)
	defer w.open.Add(-1)
	n := w.served.Add(1)
	switch w.mode.Load() {
	case httpSlow:
		select {
		case <-time.After(80 * time.Millisecond):
		case <-ctx.Done():
			return http.StatusGatewayTimeout
		}
	case httpFlaky:
		if n%3 == 0 {
			return http.StatusServiceUnavailable
		}
	case http503:
		return http.StatusServiceUnavailable
	case httpHang:
		select {
		case <-ctx.Done():
		case <-w.release:
		}
		return http.StatusGatewayTimeout // recorded only: nobody waits for it any more
	}
	return http.StatusOK
}

func (w *world) startDaemon() {
	w.d = startDaemon(w.t, w.s.addr, w.s.env)
	w.procs = append(w.procs, w.d)
}

// sigkill kills the daemon and waits until it is gone.
func (w *world) sigkill() {
	_ = w.d.cmd.Process.Signal(syscall.SIGKILL)
	<-w.d.done
	w.d.done <- nil
}

// logf adds a line to the schedule, stamped with the time since the start.
func (w *world) logf(format string, args ...any) {
	w.schedule = append(w.schedule, fmt.Sprintf("%7.3fs ", time.Since(w.began).Seconds())+fmt.Sprintf(format, args...))
}

// api is an admin API client on the current daemon.
func (w *world) api() *apiClient {
	return &apiClient{base: w.d.admin, token: ilToken, http: &http.Client{Timeout: 90 * time.Second}}
}

// call sends an admin request to the current daemon and returns the
// status (0 when the daemon did not answer) and the body.
func (w *world) call(method, path string, body []byte) (int, []byte) {
	req, _ := http.NewRequest(method, w.d.admin+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ilToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, reply
}

func batchPath(id string) string { return "/admin/batches/" + url.PathEscape(id) }

// postBatch signs and posts a notification; 0 when the daemon did not answer.
func postBatch(addr string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(e2eSecret), body))
	req.Header.Set("X-Service-Attempt", "1")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// providerProxy stands before the simulator and serves a batch under
// another id (one with ':' in it): the simulator only makes "b_<hex>" ids.
type providerProxy struct {
	target string
	mu     sync.Mutex
	alias  map[string]string // id the daemon knows → the simulator's
}

func (p *providerProxy) add(id, simID string) {
	p.mu.Lock()
	p.alias[id] = simID
	p.mu.Unlock()
}

func (p *providerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix = "/api/v1/batches/"
	id, isPage := strings.CutPrefix(r.URL.Path, prefix)
	p.mu.Lock()
	simID, aliased := p.alias[id]
	p.mu.Unlock()
	path := r.URL.Path
	if isPage && aliased {
		path = prefix + url.PathEscape(simID)
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.target+path+"?"+r.URL.RawQuery, r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, "provider unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "provider reply cut", http.StatusBadGateway)
		return
	}
	if aliased {
		body = bytes.Replace(body, []byte(`{"batch_id":"`+simID+`"`), []byte(`{"batch_id":"`+id+`"`), 1)
	}
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// natsBox is a JetStream server on a port of its own that can be stopped
// and started again there, its stream kept in the same directory.
type natsBox struct {
	t    *testing.T
	port int
	dir  string
	srv  *server.Server
}

func newNATSBox(t *testing.T) *natsBox {
	t.Helper()
	_, p, _ := net.SplitHostPort(freePort(t))
	port, _ := strconv.Atoi(p)
	b := &natsBox{t: t, port: port, dir: t.TempDir()}
	t.Cleanup(func() {
		if b.srv != nil {
			b.srv.Shutdown()
		}
	})
	b.start()
	return b
}

func (b *natsBox) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", b.port) }

func (b *natsBox) running() bool { return b.srv != nil }

func (b *natsBox) start() {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: b.port, JetStream: true,
		StoreDir: b.dir, NoLog: true, NoSigs: true})
	if err != nil {
		b.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		b.t.Fatalf("nats-server did not start again on port %d", b.port)
	}
	b.srv = srv
}

func (b *natsBox) stop() {
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	b.srv = nil
}

// connections counts the connections the gate took.
func (g *ackGate) connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns) / 2
}

// natsTap records every message published on the subject that reached
// a plain subscription, duplicates the stream dropped included. It misses
// what was published while it was reconnecting: the stream is the record,
// the tap only adds the copies the stream refused.
type natsTap struct {
	mu      sync.Mutex
	msgs    []*jetstream.RawStreamMsg
	trigger chan struct{} // closed at the next item message past a batch's first
}

func tapNATS(t *testing.T, u string) *natsTap {
	t.Helper()
	tap := &natsTap{}
	nc, err := nats.Connect(u, nats.MaxReconnects(-1), nats.ReconnectWait(25*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe(e2eSubject, func(m *nats.Msg) {
		tap.mu.Lock()
		tap.msgs = append(tap.msgs, &jetstream.RawStreamMsg{Header: m.Header, Data: bytes.Clone(m.Data), Time: time.Now()})
		if tap.trigger != nil && m.Header.Get("Batchhook-Kind") == "item" && m.Header.Get("Batchhook-Index") != "0" {
			close(tap.trigger)
			tap.trigger = nil
		}
		tap.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return tap
}

// midDelivery returns a channel closed when a message past the first item
// of a batch is published: a delivery is then going.
func (tap *natsTap) midDelivery() <-chan struct{} {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	tap.trigger = make(chan struct{})
	return tap.trigger
}

func (tap *natsTap) messages() []*jetstream.RawStreamMsg {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]*jetstream.RawStreamMsg(nil), tap.msgs...)
}
