package e2e

// End-to-end tests of the http and exec sinks: the real binary, the
// provider simulator, and on the other side a Standard Webhooks receiver
// verifying with code written from the specification (demo.Receiver,
// httpsink.Verify) or a real script.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// deliveryShown is a delivery as GET /admin/batches/{id} shows it.
type deliveryShown struct {
	Sink      string `json:"sink"`
	State     string `json:"state"`
	Attempts  int    `json:"attempts"`
	PartsDone int    `json:"parts_done"`
	LastError string `json:"last_error"`
}

// waitDelivered polls the admin API until the batch's delivery to sink is
// delivered; a failed one ends the test.
func waitDelivered(t *testing.T, d *daemonProc, id, sink string, timeout time.Duration) deliveryShown {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		code, body := get(t, d.admin+"/admin/batches/"+id, "")
		last = body
		if code == http.StatusOK {
			var b struct {
				Deliveries []deliveryShown `json:"deliveries"`
			}
			if err := json.Unmarshal([]byte(body), &b); err != nil {
				t.Fatalf("batch %s: %v\n%s", id, err, body)
			}
			for _, del := range b.Deliveries {
				if del.Sink == sink && del.State == "delivered" {
					return del
				}
				if del.Sink == sink && del.State == "failed" {
					t.Fatalf("delivery of %s to %s failed: %s", id, sink, del.LastError)
				}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("batch %s not delivered to %s within %s: %s\n%s", id, sink, timeout, last, d.out.String())
	return deliveryShown{}
}

// newWHSecret returns a fresh whsec_ secret.
func newWHSecret(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// httpSinkSetup starts a receiver with answer and points a setup's daemon
// at it with parts of maxItems items.
func httpSinkSetup(t *testing.T, opts lookupsim.Options, maxItems int, answer func(context.Context, demo.Message) int) (*setup, *demo.Receiver, string) {
	t.Helper()
	secret := newWHSecret(t)
	recv, err := demo.NewReceiver(secret, answer)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	s := newSetup(t, opts)
	s.env["BATCHHOOK_SINKS"] = "file,http"
	s.env["BATCHHOOK_HTTP_SINK_URL"] = srv.URL + "/hooks/batchhook"
	s.env["BATCHHOOK_HTTP_SINK_SECRET"] = secret
	s.env["BATCHHOOK_HTTP_SINK_MAX_ITEMS"] = strconv.Itoa(maxItems)
	s.env["BATCHHOOK_HTTP_SINK_TIMEOUT"] = "10s"
	s.env["BATCHHOOK_PAGE_LIMIT"] = "250"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	return s, recv, secret
}

// checkHTTPDelivery compares what the receiver accepted for id with the
// export and the simulator: items byte-equal to results.ndjson, the
// manifest object equal to manifest.json, the part count, and the body's
// timestamp equal to the manifest's exported_at. It returns the part count.
func checkHTTPDelivery(t *testing.T, s *setup, recv *demo.Receiver, id string, maxItems int) int {
	t.Helper()
	got, err := demo.Assemble(recv.Messages(), id)
	if err != nil {
		t.Fatalf("batch %s: %v", id, err)
	}
	results := s.checkExport(t, id) // also byte-equal to what the simulator served
	if !bytes.Equal(got.Results, results) {
		t.Fatalf("batch %s: the items received (%d) differ from results.ndjson (%d lines)", id, got.Items, bytes.Count(results, []byte("\n")))
	}
	raw, err := os.ReadFile(filepath.Join(s.exports, id, export.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Manifest, compact.Bytes()) {
		t.Fatalf("batch %s: manifest received\n%s\nwant manifest.json\n%s", id, got.Manifest, compact.Bytes())
	}
	wantParts := max(1, (got.Items+maxItems-1)/maxItems)
	if got.Parts != wantParts {
		t.Fatalf("batch %s: %d parts for %d items, want %d", id, got.Parts, got.Items, wantParts)
	}
	var m export.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, msg := range recv.Messages() {
		p, err := httpsink.DecodePart(msg.Body)
		if err != nil || p.Data.BatchID != id {
			continue
		}
		if ts, err := time.Parse(time.RFC3339Nano, p.Timestamp); err != nil || !ts.Equal(m.ExportedAt) {
			t.Fatalf("batch %s: body timestamp %q, want exported_at %s", id, p.Timestamp, m.ExportedAt)
		}
	}
	return got.Parts
}

// checkPartOrder: for each batch, no part is sent before every earlier part
// was accepted.
func checkPartOrder(t *testing.T, msgs []demo.Message) {
	t.Helper()
	accepted := map[string]int{} // batch -> highest part accepted in order
	for _, m := range msgs {
		p, err := httpsink.DecodePart(m.Body)
		if err != nil {
			t.Fatalf("message %s: %v", m.ID, err)
		}
		b := p.Data.BatchID
		if p.Data.Part > accepted[b]+1 {
			t.Fatalf("part %d of %s sent before part %d was accepted", p.Data.Part, b, accepted[b]+1)
		}
		if m.Status >= 200 && m.Status <= 299 && p.Data.Part == accepted[b]+1 {
			accepted[b] = p.Data.Part
		}
	}
}

// metricValue reads one sample of the daemon's /metrics.
func metricValue(t *testing.T, d *daemonProc, series string) float64 {
	t.Helper()
	code, body := get(t, d.admin+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", series)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestHTTPSinkDeliversSignedPartsInOrder(t *testing.T) {
	t.Parallel()
	// The simulator caps a batch at 1,000 CPFs (the provider's limit), so
	// parts of 400 items play 2,500 items in parts of 1,000:
	// 1,000 items make 3 parts, the last one short; 800 fill 2 exactly.
	const maxItems = 400
	var mu sync.Mutex
	seen := map[string]int{}
	answer := func(_ context.Context, m demo.Message) int {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID]++
		if strings.HasSuffix(m.ID, ":2") && seen[m.ID] == 1 {
			return http.StatusInternalServerError // the first attempt of every part 2
		}
		return http.StatusOK
	}
	s, recv, secret := httpSinkSetup(t, lookupsim.Options{Outcome: lookupsim.Cycle("completed", "completed", "partial", "failed")}, maxItems, answer)
	d := startDaemon(t, s.addr, s.env)
	sizes := []int{1000, 800, 37, 5}
	ids := make([]string, len(sizes))
	for i, n := range sizes {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(n, int64(100+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	wantParts := map[string]int{}
	for i, id := range ids {
		del := waitDelivered(t, d, id, "http", waitBound)
		parts := checkHTTPDelivery(t, s, recv, id, maxItems)
		if del.PartsDone != parts {
			t.Fatalf("batch %s: parts_done %d, want %d", id, del.PartsDone, parts)
		}
		wantParts[id] = parts
		if i == 0 && parts != 3 {
			t.Fatalf("the 1,000-item batch came in %d parts, want 3", parts)
		}
	}
	msgs := recv.Messages()
	checkPartOrder(t, msgs)
	first := map[string][]byte{}
	accepted, retried := map[string]int{}, 0
	for _, m := range msgs {
		if m.Err != "" {
			t.Fatalf("message %s did not verify: %s", m.ID, m.Err)
		}
		if prev, ok := first[m.ID]; ok {
			retried++
			if !bytes.Equal(prev, m.Body) {
				t.Fatalf("the retry of %s is not byte-identical to its first attempt", m.ID)
			}
		} else {
			first[m.ID] = m.Body
		}
		if m.Status == http.StatusOK {
			accepted[m.ID]++
		}
	}
	for id, n := range accepted {
		if n != 1 {
			t.Fatalf("%s accepted %d times without a crash", id, n)
		}
	}
	if retried != 2 { // part 2 of the 1,000- and the 800-item batches
		t.Fatalf("%d retried parts, want 2", retried)
	}
	// The dispatcher counts a delivery and logs sink_delivered after the
	// store has it delivered, which is what waitDelivered saw: wait for
	// the count and the lines.
	delivered := `batchhook_sink_deliveries_total{outcome="delivered",sink="http"}`
	waitFor(t, func() bool { return metricValue(t, d, delivered) >= float64(len(ids)) })
	if got := metricValue(t, d, delivered); got != float64(len(ids)) {
		t.Fatalf("delivered metric %v, want %d", got, len(ids))
	}
	if got := metricValue(t, d, `batchhook_sink_deliveries_total{outcome="retry",sink="http"}`); got != 2 {
		t.Fatalf("retry metric %v, want 2", got)
	}
	waitFor(t, func() bool { return strings.Count(d.out.String(), `"event":"sink_delivered"`) >= len(ids) })
	d.stop(t)
	logs := d.out.String() // whole, the daemon gone
	if n := strings.Count(logs, `"event":"sink_delivered"`); n != len(ids) {
		t.Fatalf("%d sink_delivered events, want %d", n, len(ids))
	}
	for _, leak := range []string{secret, strings.TrimPrefix(secret, "whsec_"), lookupsim.SampleCPFs(1000, 100)[0]} {
		if strings.Contains(logs, leak) {
			t.Fatalf("logs contain %q", leak)
		}
	}
}

// TestHTTPSinkResumesAfterSIGKILLMidPart: the receiver hangs on part 2;
// the daemon is killed while it waits and restarted. Part 1 was recorded
// before part 2 was sent, so it is not sent again; part 2 is sent again,
// byte-identical, and the batch is delivered whole.
func TestHTTPSinkResumesAfterSIGKILLMidPart(t *testing.T) {
	t.Parallel()
	const maxItems = 400
	var (
		mu       sync.Mutex
		hang     = true
		hungBody []byte
	)
	hanging := make(chan struct{})
	release := make(chan struct{})
	answer := func(ctx context.Context, m demo.Message) int {
		mu.Lock()
		h := hang && strings.HasSuffix(m.ID, ":2")
		if h {
			hang, hungBody = false, m.Body
			close(hanging)
		}
		mu.Unlock()
		if h {
			select { // until the killed daemon's connection goes away
			case <-ctx.Done():
			case <-release:
			}
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	s, recv, _ := httpSinkSetup(t, lookupsim.Options{}, maxItems, answer)
	t.Cleanup(func() { close(release) }) // before the server's Close (cleanups run last first)
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(1000, 42))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hanging:
	case <-time.After(waitBound):
		t.Fatalf("part 2 never arrived:\n%s", d.out.String())
	}
	before := len(recv.Messages()) // part 1, accepted
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
	d.done <- nil

	d2 := startDaemon(t, s.addr, s.env)
	del := waitDelivered(t, d2, id, "http", waitBound)
	if parts := checkHTTPDelivery(t, s, recv, id, maxItems); parts != 3 || del.PartsDone != 3 {
		t.Fatalf("%d parts, parts_done %d; want 3", parts, del.PartsDone)
	}
	msgs := recv.Messages()
	checkPartOrder(t, msgs)
	counts, seenBeforeKill := map[string]int{}, map[string]bool{}
	for i, m := range msgs {
		if m.Err != "" {
			t.Fatalf("message %s did not verify: %s", m.ID, m.Err)
		}
		if m.Status == http.StatusOK {
			counts[m.ID]++
		}
		if i < before {
			seenBeforeKill[m.ID] = true
		}
	}
	// At-least-once per part with dedup on webhook-id: a second copy is
	// allowed only of an id the receiver already had before the kill. Part
	// 1 was marked before part 2 went out, so here it must come once.
	dups := 0
	for mid, n := range counts {
		if n > 1 {
			dups += n - 1
			if !seenBeforeKill[mid] {
				t.Fatalf("%s accepted %d times but was never sent before the kill", mid, n)
			}
		}
	}
	if counts[id+":1"] != 1 || counts[id+":2"] != 1 || counts[id+":3"] != 1 {
		t.Fatalf("accepted copies %v; want each part once (part 1 was recorded before the kill)", counts)
	}
	t.Logf("duplicates after the SIGKILL: %d", dups)
	var resent []byte
	for _, m := range msgs {
		if m.ID == id+":2" && m.Status == http.StatusOK {
			resent = m.Body
		}
	}
	mu.Lock()
	if !bytes.Equal(resent, hungBody) {
		t.Fatal("part 2 sent after the restart is not byte-identical to the one cut by the kill")
	}
	mu.Unlock()
	d2.stop(t)
}

// TestExecSinkWithoutFileRemovesTheExport: SINKS=exec alone. A script
// copies the export; once it exits 0 the export directory is removed, and
// the copy is what the simulator served. The script also sees only the
// documented environment.
func TestExecSinkWithoutFileRemovesTheExport(t *testing.T) {
	t.Parallel()
	copies := t.TempDir()
	script := filepath.Join(t.TempDir(), "copy.sh")
	const body = "#!/bin/sh\nset -eu\n" +
		"/bin/cp \"$2/results.ndjson\" \"$1/$BATCHHOOK_BATCH_ID.tmp\"\n" +
		"/usr/bin/env > \"$1/$BATCHHOOK_BATCH_ID.env\"\n" +
		"/bin/mv \"$1/$BATCHHOOK_BATCH_ID.tmp\" \"$1/$BATCHHOOK_BATCH_ID.ndjson\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_SINKS"] = "exec"
	argv, _ := json.Marshal([]string{"/bin/sh", script, copies})
	s.env["BATCHHOOK_EXEC_SINK_COMMAND"] = string(argv)
	s.env["BATCHHOOK_EXEC_SINK_TIMEOUT"] = "10s"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	d := startDaemon(t, s.addr, s.env)
	ids := []string{}
	for i, n := range []int{300, 12} {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(n, int64(7+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitDelivered(t, d, id, "exec", waitBound)
		waitFor(t, func() bool {
			_, err := os.Stat(filepath.Join(s.exports, id))
			return os.IsNotExist(err)
		})
		items, ok := s.sim.Results(id)
		if !ok {
			t.Fatalf("simulator has no results for %s", id)
		}
		var want bytes.Buffer
		for _, it := range items {
			want.Write(it)
			want.WriteByte('\n')
		}
		got, err := os.ReadFile(filepath.Join(copies, id+".ndjson"))
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("copy of %s (%d bytes, %v) differs from the %d bytes served", id, len(got), err, want.Len())
		}
		env, err := os.ReadFile(filepath.Join(copies, id+".env"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
			name, _, _ := strings.Cut(line, "=")
			if strings.HasPrefix(name, "BATCHHOOK_") && name != "BATCHHOOK_BATCH_ID" && name != "BATCHHOOK_BATCH_STATUS" &&
				name != "BATCHHOOK_EXPORT_DIR" && name != "BATCHHOOK_EXPORT_VERSION" {
				t.Fatalf("the command saw %s of batchhook's environment", name)
			}
		}
		if !strings.Contains(string(env), "BATCHHOOK_EXPORT_VERSION=0\n") {
			t.Fatalf("the command's environment lacks BATCHHOOK_EXPORT_VERSION=0 (a first export):\n%s", env)
		}
		if !strings.Contains(string(env), "BATCHHOOK_EXPORT_DIR="+filepath.Join(s.exports, id)+"\n") {
			t.Fatalf("the command's environment lacks BATCHHOOK_EXPORT_DIR of %s:\n%s", id, env)
		}
	}
	// The line comes after the directory is gone and the store has
	// recorded it: wait for it; after the stop, no more may have come.
	waitFor(t, func() bool { return strings.Count(d.out.String(), `"event":"export_removed"`) >= len(ids) })
	d.stop(t)
	if n := strings.Count(d.out.String(), `"event":"export_removed"`); n != len(ids) {
		t.Fatalf("%d export_removed events, want %d", n, len(ids))
	}
}
