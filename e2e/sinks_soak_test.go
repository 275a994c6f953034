package e2e

// The sinks' crash soak: the real binary with SINKS=file,http,
// exec,nats, SIGKILLed at random moments while batches are fetched and
// delivered, against sinks that fail on purpose: the Standard Webhooks
// receiver answers 500, 429 or slowly on a share of attempts, the exec
// command exits 75 on a share of runs, and a real nats-server's stream
// drops the messages a crash publishes twice. Afterwards every delivery
// must be delivered and every batch found whole at every sink; a copy
// beyond the first is allowed only where the sink's guarantee in docs/sinks.md
// allows it, and is counted:
//   - http: a part accepted twice carries the same webhook-id and a
//     byte-identical body, and is the part its batch had last had
//     accepted when a kill came (the one in flight);
//   - exec: every successful run hashes the export, and no daemon runs a
//     batch successfully twice (a second run comes from a later daemon, or
//     from a command a killed daemon had started);
//   - nats: after the stream's duplicate window, exactly one message per
//     item and one manifest per batch;
//   - a kill repeats at most one http part or exec run per delivery going
//     (SINK_WORKERS a sink).
// go test -run TestSinksSoak ./cmd/batchhook -soak 2m runs it longer.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// soakExecScript logs each run to $1 (the export directory comes last):
// a share exits 75 after logging "tempfail", the others log "ok", the
// batch id, the sha256 of results.ndjson, the run's start and end in
// Unix nanoseconds and the pid of the daemon that started it ($PPID: the
// shell is the daemon's child), then exit 0. A short random sleep widens
// the window in which a kill finds a run going.
const soakExecScript = `#!/bin/sh
set -eu
log=$1 dir=$2
start=$(date +%s%N)
r=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
sleep 0.$((r % 3))
if [ "$r" -lt 64 ]; then
	echo "tempfail $BATCHHOOK_BATCH_ID $start" >> "$log"
	exit 75
fi
sum=$(sha256sum "$dir/results.ndjson" | cut -d' ' -f1)
echo "ok $BATCHHOOK_BATCH_ID $sum $start $(date +%s%N) $PPID" >> "$log"
`

// soakHTTPAnswer fails a share of verified requests: 500, 429, or an
// answer up to 400 ms late (a 503 if the daemon went away meanwhile: the
// receiver did not keep it).
func soakHTTPAnswer(ctx context.Context, _ demo.Message) int {
	switch r := rand.Float64(); {
	case r < 0.12:
		return http.StatusInternalServerError
	case r < 0.22:
		return http.StatusTooManyRequests
	case r < 0.35:
		select {
		case <-time.After(time.Duration(50+rand.IntN(350)) * time.Millisecond):
		case <-ctx.Done():
			return http.StatusServiceUnavailable
		}
	}
	return http.StatusOK
}

func TestSinksSoakKillsAndSinkFaults(t *testing.T) {
	t.Parallel()
	srv := natsServer(t)
	nc, js := natsJS(t, srv.ClientURL())
	stream, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "RESULTS", Subjects: []string{e2eSubject},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var published atomic.Int64
	sub, err := nc.Subscribe(e2eSubject, func(*nats.Msg) { published.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	const maxItems = 7 // a 60-item batch is 9 parts
	const workers = 2  // deliveries going at once, a sink
	s, recv, secret := httpSinkSetup(t, lookupsim.Options{
		Outcome:         lookupsim.Cycle("completed", "partial", "completed", "failed", "completed", "expired"),
		ProcessingDelay: 30 * time.Millisecond, RetryBackoff: 50 * time.Millisecond, MaxAttempts: 10_000,
		SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited,
	}, maxItems, soakHTTPAnswer)
	tmp := t.TempDir()
	execLog, script := filepath.Join(tmp, "runs.log"), filepath.Join(tmp, "load.sh")
	if err := os.WriteFile(script, []byte(soakExecScript), 0o700); err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{"/bin/sh", script, execLog})
	s.env["BATCHHOOK_SINKS"] = "file,http,exec,nats"
	// Far past the receiver's slowest answer (400 ms): a part the daemon
	// gave up on while the receiver still took it would be a copy that no
	// kill explains, and the duplicate check below blames kills only.
	s.env["BATCHHOOK_HTTP_SINK_TIMEOUT"] = "20s"
	s.env["BATCHHOOK_EXEC_SINK_COMMAND"] = string(argv)
	s.env["BATCHHOOK_EXEC_SINK_TIMEOUT"] = "60s" // far past a run (under 1 s): a timeout here is a hang
	s.env["BATCHHOOK_NATS_URL"] = srv.ClientURL()
	s.env["BATCHHOOK_NATS_PUBLISH_TIMEOUT"] = "5s"
	s.env["BATCHHOOK_PAGE_LIMIT"] = "10"
	s.env["BATCHHOOK_BACKOFF_MAX"] = "300ms"
	s.env["BATCHHOOK_SINK_WORKERS"] = strconv.Itoa(workers)

	var (
		mu    sync.Mutex
		procs = []*daemonProc{startDaemon(t, s.addr, s.env)}
		ids   []string
		cpfs  []string // the first of each batch, to look for in the logs
		kills []time.Time
	)
	deadline := time.Now().Add(*soakFor)
	var wg sync.WaitGroup
	for g := range 4 { // batches of 1 to 60 CPFs until the kills stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				batch := lookupsim.SampleCPFs(1+(g*13+i*7)%60, int64(7000+g*1000+i))
				id, err := s.sim.Submit(batch)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids, cpfs = append(ids, id), append(cpfs, batch[0])
				mu.Unlock()
				time.Sleep(time.Duration(150+rand.IntN(250)) * time.Millisecond)
			}
		}()
	}
	// At least three kills however long a restart takes: on a loaded
	// machine a restart of the race binary can eat most of the window.
	for time.Now().Before(deadline) || len(kills) < 3 {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		d := procs[len(procs)-1]
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		d.done <- nil
		// When the killed daemon is gone, not when it was signalled: what it
		// sent in between still belongs before the kill.
		kills = append(kills, time.Now())
		procs = append(procs, startDaemon(t, s.addr, s.env))
	}
	wg.Wait()
	final := procs[len(procs)-1]
	for _, id := range ids {
		s.waitExport(t, id, final, 60*time.Second)
	}
	waitAllDelivered(t, final, 3*len(ids), 60*time.Second+*soakFor)

	streamMsgs := streamMessages(t, stream)
	natsOf := map[string][]*jetstream.RawStreamMsg{} // by batch, in stream order
	for _, m := range streamMsgs {
		b := m.Header.Get("Batchhook-Batch-Id")
		natsOf[b] = append(natsOf[b], m)
	}
	httpOf := map[string][]demo.Message{} // by batch (webhook-id <batch>:<part>), in arrival order
	for _, m := range recv.Messages() {
		b, _, _ := strings.Cut(m.ID, ":")
		httpOf[b] = append(httpOf[b], m)
	}
	runs := readExecLog(t, execLog)
	daemons := map[int]bool{}
	for _, d := range procs {
		daemons[d.cmd.Process.Pid] = true
	}
	var st struct{ lost, httpParts, httpDups, execRuns, execReruns, orphans, tempfails, natsWant int }
	fail := func(format string, args ...any) { st.lost++; t.Errorf(format, args...) }
	for _, id := range ids {
		results := s.checkExport(t, id) // the file sink: byte-equal to what the simulator served
		manifest, err := os.ReadFile(filepath.Join(s.exports, id, export.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		// http: every part present, the items put back together equal
		// results.ndjson, a copy only across a kill.
		if got, err := demo.Assemble(httpOf[id], id); err != nil {
			fail("http: %v", err)
		} else if !bytes.Equal(got.Results, results) || !bytes.Equal(got.Manifest, compactJSON(t, manifest)) {
			fail("http: batch %s: the %d items or the manifest received differ from the export", id, got.Items)
		} else {
			st.httpParts += got.Parts
		}
		// exec: at least one successful run that hashed this export.
		sum := sha256.Sum256(results)
		ok, byDaemon := 0, map[int]bool{}
		for _, r := range runs[id] {
			if r.tempfail {
				st.tempfails++
				continue
			}
			if r.sha != hex.EncodeToString(sum[:]) {
				fail("exec: batch %s: a run hashed %s, not the export", id, r.sha)
			}
			// By daemon, not by clock: a command a daemon started just
			// before its kill may read its start time after the kill.
			if !daemons[r.daemon] {
				st.orphans++ // its daemon was gone before it started: reparented
			} else if byDaemon[r.daemon] {
				t.Errorf("exec: daemon %d ran batch %s successfully twice", r.daemon, id)
			}
			ok, byDaemon[r.daemon] = ok+1, true
		}
		st.execRuns += ok
		st.execReruns += max(0, ok-1)
		if ok == 0 {
			fail("exec: batch %s: no successful run", id)
		}
		// nats: once, in order, after the stream's dedup.
		st.natsWant += bytes.Count(results, []byte("\n")) + 1
		if err := natsBatchErr(natsOf[id], id, results, manifest); err != nil {
			fail("nats: %v", err)
		}
	}
	st.httpDups = checkHTTPDuplicates(t, recv.Messages(), kills)
	if len(streamMsgs) != st.natsWant {
		fail("nats: the stream holds %d messages, want %d", len(streamMsgs), st.natsWant)
	}
	// A kill can repeat only what the deliveries going at that moment (at
	// most SINK_WORKERS a sink) had done but not recorded: an exec run,
	// an http part, nats messages after the recorded prefix (100) and the
	// one in flight.
	if st.execReruns > len(kills)*workers || st.httpDups > len(kills)*workers {
		t.Errorf("%d exec re-runs and %d http parts accepted twice for %d kills: more than %d a kill", st.execReruns, st.httpDups, len(kills), workers)
	}
	if dropped := published.Load() - int64(len(streamMsgs)); dropped > int64(len(kills))*workers*101 {
		t.Errorf("nats: %d messages published twice for %d kills, more than the guarantee allows", dropped, len(kills))
	}
	final.stop(t)
	for _, d := range procs {
		for _, leak := range append([]string{secret, strings.TrimPrefix(secret, "whsec_")}, cpfs...) {
			if strings.Contains(d.out.String(), leak) {
				t.Errorf("a daemon's logs hold the http sink's secret or a CPF")
			}
		}
	}
	printSoakSummary("sinks soak: batches=%d kills=%d http_parts=%d http_attempts=%d http_dup_parts=%d exec_runs=%d exec_reruns=%d exec_orphans=%d exec_tempfails=%d nats_msgs=%d nats_published=%d lost=%d\n",
		len(ids), len(kills), st.httpParts, len(recv.Messages()), st.httpDups, st.execRuns, st.execReruns, st.orphans, st.tempfails,
		len(streamMsgs), published.Load(), st.lost)
	if st.lost != 0 {
		t.Fatalf("lost or broken at a sink: %d", st.lost)
	}
	if len(kills) < 3 || st.tempfails == 0 || len(recv.Messages()) == st.httpParts {
		t.Fatalf("the soak exercised too little: %d kills, %d exec tempfails, %d http attempts for %d parts",
			len(kills), st.tempfails, len(recv.Messages()), st.httpParts)
	}
}

// waitAllDelivered polls the admin API until want deliveries are
// delivered and none is pending; a failed one ends the test (every fault
// of the soak is transient).
func waitAllDelivered(t *testing.T, d *daemonProc, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if failed := listDeliveryRows(t, d, "failed"); len(failed) != 0 {
			t.Fatalf("%d deliveries failed, e.g. %s to %s: %s", len(failed), failed[0].BatchID, failed[0].Sink, failed[0].LastError)
		}
		pending, delivered := listDeliveryRows(t, d, "pending"), listDeliveryRows(t, d, "delivered")
		if len(pending) == 0 && len(delivered) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d pending, %d of %d delivered\n%s", timeout, len(pending), len(delivered), want, d.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listDeliveryRows reads every page of GET /admin/deliveries?state=.
func listDeliveryRows(t *testing.T, d *daemonProc, state string) []admin.DeliveryView {
	t.Helper()
	var all []admin.DeliveryView
	for cursor := ""; ; {
		code, body := get(t, d.admin+"/admin/deliveries?limit=1000&state="+state+"&cursor="+url.QueryEscape(cursor), "")
		var page struct {
			Items      []admin.DeliveryView `json:"items"`
			NextCursor string               `json:"next_cursor"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
			t.Fatalf("deliveries ?state=%s: %d %s", state, code, body)
		}
		all = append(all, page.Items...)
		if cursor = page.NextCursor; cursor == "" {
			return all
		}
	}
}

// execRun is one line of the exec command's log.
type execRun struct {
	tempfail bool
	sha      string
	start    time.Time
	daemon   int // the pid of the daemon that started it
}

// readExecLog groups the command's runs by batch, in the order they
// started (a run a kill left going may end after a later one).
func readExecLog(t *testing.T, path string) map[string][]execRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]execRun{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		var r execRun
		start := ""
		switch {
		case len(f) == 3 && f[0] == "tempfail":
			r.tempfail, start = true, f[2]
		case len(f) == 6 && f[0] == "ok":
			r.sha, start = f[2], f[3]
			pid, err := strconv.Atoi(f[5])
			if err != nil {
				t.Fatalf("exec log line %q: %v", line, err)
			}
			r.daemon = pid
		default:
			t.Fatalf("exec log line %q", line)
		}
		ns, err := strconv.ParseInt(start, 10, 64)
		if err != nil {
			t.Fatalf("exec log line %q: %v", line, err)
		}
		r.start = time.Unix(0, ns)
		runs[f[1]] = append(runs[f[1]], r)
	}
	for _, rs := range runs {
		slices.SortFunc(rs, func(a, b execRun) int { return a.start.Compare(b.start) })
	}
	return runs
}

// checkHTTPDuplicates counts the parts accepted more than once. The
// guarantee: a part is recorded before the next is sent, so a crash can
// repeat only the part in flight; a later copy of part k must therefore
// follow a kill before which k was the highest part of its batch accepted.
// demo.Assemble has checked the copies are byte-identical.
func checkHTTPDuplicates(t *testing.T, msgs []demo.Message, kills []time.Time) int {
	t.Helper()
	checkPartOrder(t, msgs)
	type accepted struct {
		batch string
		part  int
		at    time.Time
	}
	var ok []accepted
	for _, m := range msgs {
		if m.Err != "" {
			t.Errorf("message %s did not verify: %s", m.ID, m.Err)
			continue
		}
		if m.Status >= 200 && m.Status <= 299 {
			p, err := httpsink.DecodePart(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			ok = append(ok, accepted{p.Data.BatchID, p.Data.Part, m.At})
		}
	}
	slices.SortStableFunc(ok, func(a, b accepted) int { return a.at.Compare(b.at) })
	seen, dups := map[string]bool{}, 0
	for i, m := range ok {
		id := m.batch + ":" + strconv.Itoa(m.part)
		if !seen[id] {
			seen[id] = true
			continue
		}
		dups++
		var kill time.Time // the last kill before this copy
		for _, k := range kills {
			if k.Before(m.at) {
				kill = k
			}
		}
		highest := 0
		for _, o := range ok[:i] {
			if o.batch == m.batch && o.at.Before(kill) {
				highest = max(highest, o.part)
			}
		}
		if highest != m.part {
			t.Errorf("http: part %s accepted again, but the highest part accepted before the last kill was %d", id, highest)
		}
	}
	return dups
}

func compactJSON(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
