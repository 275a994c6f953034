package memreclaim

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/internal/testutil"
)

// It acts only after a quiet spell with much memory held, and not again
// until another quiet spell has passed.
func TestReclaimsAfterAQuietSpellOnly(t *testing.T) {
	clock := time.Unix(1000, 0)
	stats := Stats{GCCycles: 7, Held: 200 << 20}
	frees := 0
	logs := &testutil.SyncBuffer{}
	r := New(zerolog.New(logs))
	r.now = func() time.Time { return clock }
	r.read = func() Stats { return stats }
	r.free = func() { frees++; stats.GCCycles++; stats.Held = 20 << 20 }

	step := func(d time.Duration) bool { clock = clock.Add(d); return r.runOnce() }
	if step(0) || step(10*time.Second) {
		t.Fatal("returned memory before a quiet spell")
	}
	stats.GCCycles++ // the program collected: the spell starts again
	if step(5*time.Second) || step(10*time.Second) {
		t.Fatal("returned memory less than 15 s after a collection")
	}
	if !step(6*time.Second) || frees != 2 {
		t.Fatalf("did not return memory after 16 s without a collection (%d frees)", frees)
	}
	if !strings.Contains(logs.String(), `"event":"memory_returned"`) {
		t.Fatalf("no memory_returned line: %s", logs.String())
	}
	// Not again within 15 s of the last return.
	stats.Held = 100 << 20
	if step(5*time.Second) || frees != 2 {
		t.Fatal("acted again within 15 s of the last return")
	}
	if !step(11*time.Second) || frees != 4 {
		t.Fatalf("did not act after the next quiet spell (%d frees)", frees)
	}
	// Memory in use: a return that gives little back waits twice as long
	// before the next, up to a minute.
	r.free = func() { frees++; stats.GCCycles++; stats.Held = 60 << 20 }
	stats.Held = 61 << 20
	if !step(16*time.Second) || frees != 6 {
		t.Fatalf("did not act after 16 s (%d frees)", frees)
	}
	if step(16*time.Second) || !step(16*time.Second) || frees != 8 {
		t.Fatalf("did not back off to 30 s after a return that gave little (%d frees)", frees)
	}
	if step(59*time.Second) || !step(2*time.Second) || frees != 10 {
		t.Fatalf("did not back off to at most a minute (%d frees)", frees)
	}
	r.free = func() { frees++; stats.GCCycles++; stats.Held = 20 << 20 }
	stats.Held = 100 << 20
	if step(59*time.Second) || !step(2*time.Second) || frees != 12 {
		t.Fatalf("after the back-off, no return (%d frees)", frees)
	}
	// Held is now below the floor: nothing more to do, however quiet.
	if step(20*time.Second) || step(20*time.Second) || frees != 12 {
		t.Fatalf("returned memory below the floor (%d frees)", frees)
	}
}

// ReadStats reads the real runtime.
func TestReadStats(t *testing.T) {
	before := ReadStats()
	runtime.GC()
	after := ReadStats()
	if after.GCCycles <= before.GCCycles || after.Held == 0 {
		t.Fatalf("stats %+v then %+v", before, after)
	}
}
