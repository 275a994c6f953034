package e2e

// The crash and fault soak: the real binary, SIGKILLed at random moments
// while the simulator delivers (and re-delivers) notifications, serves
// faulty pages, and the test replays genuine deliveries. Afterwards every
// batch must be exported exactly once, byte for byte, with nothing left
// half done. Bounded for CI; go test -run TestSoak ./cmd/batchhook -soak 2m
// runs it longer.

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

var soakFor = flag.Duration("soak", 6*time.Second, "how long the soak keeps killing the daemon")

func TestSoakKillsFaultsAndReplays(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{
		Outcome:         lookupsim.Cycle("completed", "partial", "expired", "failed", "completed"),
		ProcessingDelay: 30 * time.Millisecond,
		RetryBackoff:    50 * time.Millisecond,
		MaxAttempts:     10_000, // the provider keeps trying while batchhook is down
		SubmitPerMinute: lookupsim.Unlimited,
		MaxInFlight:     lookupsim.Unlimited,
		Faults:          lookupsim.Faults{SlowPage: 3 * time.Millisecond, DuplicateDeliveries: 1},
	})
	s.env["BATCHHOOK_PAGE_LIMIT"] = "10"
	s.env["BATCHHOOK_BACKOFF_MAX"] = "300ms"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"

	var (
		mu    sync.Mutex
		procs []*daemonProc
	)
	current := func() *daemonProc { mu.Lock(); defer mu.Unlock(); return procs[len(procs)-1] }
	start := func() {
		d := startDaemon(t, s.addr, s.env)
		mu.Lock()
		procs = append(procs, d)
		mu.Unlock()
	}
	start()

	// Submit batches from several goroutines; the simulator notifies.
	const batches = 240
	ids := make(chan string, batches)
	var submittedMu sync.Mutex
	var submitted []string
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < batches/8; i++ {
				id, err := s.sim.Submit(lookupsim.SampleCPFs(5+(g*7+i)%40, int64(g*1000+i)))
				if err != nil {
					t.Error(err)
					return
				}
				ids <- id
				submittedMu.Lock()
				submitted = append(submitted, id)
				submittedMu.Unlock()
				time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			}
		}(g)
	}

	// Faults and replays while the daemon is killed and restarted.
	stop := make(chan struct{})
	var replays, kills atomic.Int64
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { // replay genuine notifications, as an attacker or a proxy would
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			submittedMu.Lock()
			id := ""
			if len(submitted) > 0 {
				id = submitted[rand.IntN(len(submitted))]
			}
			submittedMu.Unlock()
			if body, ok := s.sim.Notification(id); ok {
				postQuiet(s.addr, body)
				replays.Add(1)
			}
		}
	}()
	go func() { // rotate provider faults
		defer bg.Done()
		modes := []lookupsim.Faults{
			{FailGETs: 5, FailStatus: 500, SlowPage: 3 * time.Millisecond, DuplicateDeliveries: 1},
			{FailGETs: 3, FailStatus: 429, RetryAfter: time.Second, SlowPage: 3 * time.Millisecond, DuplicateDeliveries: 1},
			{DropGETs: 4, SlowPage: 3 * time.Millisecond, DuplicateDeliveries: 1},
			{SlowPage: 20 * time.Millisecond, DuplicateDeliveries: 1},
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			s.sim.SetFaults(modes[i%len(modes)])
		}
	}()
	deadline := time.Now().Add(*soakFor)
	// At least three kills however long a restart takes on a loaded machine.
	for time.Now().Before(deadline) || kills.Load() < 3 {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		d := current()
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		d.done <- nil
		kills.Add(1)
		start()
	}
	wg.Wait()
	close(ids)
	close(stop)
	bg.Wait()
	s.sim.SetFaults(lookupsim.Faults{})

	// Every batch must end exported; wait for the last daemon to drain.
	var all []string
	for id := range ids {
		all = append(all, id)
	}
	final := current()
	for _, id := range all {
		s.waitExport(t, id, final, 60*time.Second)
	}
	waitFor(t, func() bool { return countExported(s.exports) == len(all) })
	final.stop(t)

	lost, duplicated := 0, 0
	exportedLines := map[string]int{}
	for _, d := range procs {
		for _, line := range strings.Split(d.out.String(), "\n") {
			var ev struct {
				Event   string `json:"event"`
				BatchID string `json:"batch_id"`
				Already bool   `json:"already_published"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "batch_exported" && !ev.Already {
				exportedLines[ev.BatchID]++
			}
		}
	}
	for _, id := range all {
		if ok, err := export.Verify(filepath.Join(s.exports, id)); !ok || err != nil {
			lost++
			continue
		}
		s.checkExport(t, id) // byte for byte what the simulator served, in order
		if exportedLines[id] > 1 {
			duplicated++
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(s.exports, ".partial")); len(entries) != 0 {
		t.Errorf(".partial holds %d entries after the soak", len(entries))
	}
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatalf("database does not open cleanly after the soak: %v", err)
	}
	counts, _ := st.Counts()
	st.Close()
	if counts[store.StateExported] != len(all) || counts[store.StateQueued]+counts[store.StateFetching]+counts[store.StateAbandoned] != 0 {
		t.Errorf("states after the soak: %v", counts)
	}
	stats := s.sim.Stats()
	printSoakSummary("soak: batches=%d deliveries_sent=%d acked=%d replays=%d kills=%d exported=%d lost=%d duplicated=%d provider_faults=%d (500/429 %d, dropped %d)\n",
		len(all), stats.Deliveries, stats.DeliveriesAcked, replays.Load(), kills.Load(), len(all)-lost, lost, duplicated,
		stats.GETFaults+stats.Dropped, stats.GETFaults, stats.Dropped)
	if lost != 0 || duplicated != 0 {
		t.Fatalf("lost %d, duplicated %d", lost, duplicated)
	}
	if kills.Load() < 3 || stats.GETFaults+stats.Dropped == 0 {
		t.Fatalf("the soak exercised too little: %d kills, %d faults", kills.Load(), stats.GETFaults+stats.Dropped)
	}
}

// postQuiet replays a signed body; the daemon may be down, which is fine.
func postQuiet(addr string, body []byte) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set(signature.Header, signature.Sign([]byte(e2eSecret), body))
	req.Header.Set("X-Service-Attempt", "99")
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

func countExported(root string) int {
	entries, _ := os.ReadDir(root)
	n := 0
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".partial" {
			n++
		}
	}
	return n
}
