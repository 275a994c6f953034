package rejectkeep

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// blockingSaver holds every write until release is closed.
type blockingSaver struct {
	release chan struct{}
	mu      sync.Mutex
	writes  [][]store.Rejected
}

func (b *blockingSaver) KeepRejected(rs []store.Rejected, keep int) error {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes = append(b.writes, rs)
	return nil
}

// Keep never waits for a slow store: beyond the queue, entries are dropped
// (and counted) at once; the writer then writes what waited in one go.
func TestKeepNeverBlocksAndBatchesWrites(t *testing.T) {
	saver := &blockingSaver{release: make(chan struct{})}
	dropped := 0
	k := New(saver, 100, zerolog.Nop(), func() { dropped++ })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()

	start := time.Now()
	queued := 0
	for i := range 3 * QueueSize {
		if k.Keep(store.Rejected{BodyLen: i}) {
			queued++
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Keep took %s with the store stuck", took)
	}
	if dropped != 3*QueueSize-queued || dropped == 0 {
		t.Fatalf("queued %d, dropped %d", queued, dropped)
	}
	close(saver.release)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The writer held one write (stuck in the store): the entries it had
	// taken before it got stuck, as many as had arrived by then (a loaded
	// machine lets several in). The queue held the rest, at most QueueSize.
	if len(saver.writes) == 0 {
		t.Fatalf("queued %d, nothing written", queued)
	}
	if queued > QueueSize+len(saver.writes[0]) {
		t.Fatalf("queued %d with a first write of %d entries: more than the queue (%d) holds", queued, len(saver.writes[0]), QueueSize)
	}
	total := 0
	for _, w := range saver.writes {
		total += len(w)
	}
	if total != queued || len(saver.writes) > 3 {
		t.Fatalf("wrote %d entries in %d writes, want %d in at most 3", total, len(saver.writes), queued)
	}
}

func TestKeepZeroKeepsNothing(t *testing.T) {
	k := New(&blockingSaver{release: make(chan struct{})}, 0, zerolog.Nop(), nil)
	if k.Keep(store.Rejected{}) {
		t.Fatal("keep 0 queued an entry")
	}
}
