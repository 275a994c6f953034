package e2e

// The kafka sink's crash soak: the real binary SIGKILLed at random moments
// while batches are exported and sent to kfake, which drops a share of the
// produce and commit connections (sink faults). Afterwards a read_committed
// consumer must find every batch, each copy whole and byte-equal to the
// export; copies beyond the first can only come from the window docs/sinks.md
// names (a commit acknowledged by Kafka but not yet recorded), and are
// counted.

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/batchhook/batchhook/lookupsim"
)

func TestKafkaSoakKillsAndSinkFaults(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, kafkaTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var faults atomic.Int64
	for _, k := range []struct {
		key  kmsg.Key
		rate float64
	}{{kmsg.Produce, 0.05}, {kmsg.EndTxn, 0.15}} {
		c.ControlKey(int16(k.key), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if rand.Float64() < k.rate {
				faults.Add(1)
				return nil, errors.New("soak: connection dropped"), true // the broker never acts on it
			}
			return nil, nil, false
		})
	}
	s := newSetup(t, lookupsim.Options{ProcessingDelay: 30 * time.Millisecond, SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited, MaxAttempts: 10_000})
	s.env["BATCHHOOK_SINKS"] = "file,kafka"
	s.env["BATCHHOOK_KAFKA_BROKERS"] = c.ListenAddrs()[0]
	s.env["BATCHHOOK_KAFKA_TIMEOUT"] = "5s"
	s.env["BATCHHOOK_PAGE_LIMIT"] = "10"
	s.env["BATCHHOOK_BACKOFF_MAX"] = "300ms"
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"

	var (
		mu    sync.Mutex
		procs = []*daemonProc{startDaemon(t, s.addr, s.env)}
		ids   []string
	)
	const batches = 60
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches / 4 {
				id, err := s.sim.Submit(lookupsim.SampleCPFs(1+(g*11+i*7)%60, int64(9000+g*100+i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
			}
		}()
	}
	kills := 0
	// At least three kills however long a restart takes on a loaded machine.
	for deadline := time.Now().Add(min(*soakFor, 6*time.Second)); time.Now().Before(deadline) || kills < 3; {
		time.Sleep(time.Duration(300+rand.IntN(500)) * time.Millisecond)
		d := procs[len(procs)-1]
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		d.done <- nil
		kills++
		procs = append(procs, startDaemon(t, s.addr, s.env))
	}
	wg.Wait()
	final := procs[len(procs)-1]
	for _, id := range ids {
		waitDelivered(t, final, id, "kafka", 60*time.Second)
	}
	committed := consumeKafka(t, c.ListenAddrs(), kgo.ReadCommitted(), ids, 30*time.Second)
	lost, broken, dupBatches := 0, 0, 0
	for _, id := range ids {
		results := s.checkExport(t, id)
		lines := bytes.SplitAfter(results, []byte("\n"))
		lines = lines[:len(lines)-1]
		var mine []*kgo.Record
		for _, r := range committed {
			if string(r.Key) == id {
				mine = append(mine, r)
			}
		}
		per := len(lines) + 1
		if len(mine) == 0 {
			lost++
			continue
		}
		if len(mine)%per != 0 {
			broken++
			continue
		}
		for k, r := range mine { // each copy: the items in order, then the manifest
			i := k % per
			want := "manifest"
			if i < len(lines) {
				want = "item"
				if !bytes.Equal(append(bytes.Clone(r.Value), '\n'), lines[i]) {
					broken++
					break
				}
			}
			if kafkaHeader(r, "batchhook-kind") != want {
				broken++
				break
			}
		}
		if len(mine) > per {
			dupBatches++
		}
	}
	final.stop(t)
	printSoakSummary("kafka soak: batches=%d kills=%d sink_faults=%d committed_records=%d lost=%d broken=%d batches_committed_twice=%d\n",
		len(ids), kills, faults.Load(), len(committed), lost, broken, dupBatches)
	if lost != 0 || broken != 0 {
		t.Fatalf("lost %d, broken %d", lost, broken)
	}
	if kills < 3 || faults.Load() == 0 {
		t.Fatalf("the soak exercised too little: %d kills, %d sink faults", kills, faults.Load())
	}
}
