// Package rejectkeep keeps the last rejected (401) deliveries in the store
// so that an operator can check one with `batchhook verify --rejected ID`,
// without letting a flood of forged requests become a flood of writes or
// slow down the 401 itself.
//
// Three things bound the cost. The receiver hands over only the requests
// whose webhook_rejected line the log sampler let through (its budget of
// 20 lines a second, shared by every line a stranger can cause), so the
// rate of entries is the rate of log lines. Keep never blocks: it puts the
// entry in a small queue and returns; when the queue is full (the disk is
// slow) the entry is dropped and counted. One writer drains the queue and
// writes whatever is waiting in one transaction, so at most one commit for
// rejected deliveries is in flight at a time.
package rejectkeep

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// QueueSize is how many entries may wait for the writer.
const QueueSize = 32

// Saver is the store's side: KeepRejected writes entries in one
// transaction and trims the ring to keep.
type Saver interface {
	KeepRejected(rs []store.Rejected, keep int) error
}

// Keeper queues rejected deliveries for the writer (Run).
type Keeper struct {
	save    Saver
	keep    int
	log     zerolog.Logger
	queue   chan store.Rejected
	dropped func()
}

// New returns a Keeper that keeps the last keep entries; dropped (may be
// nil) is called for each entry left out because the queue was full.
func New(save Saver, keep int, log zerolog.Logger, dropped func()) *Keeper {
	if dropped == nil {
		dropped = func() {}
	}
	return &Keeper{save: save, keep: keep, log: log, queue: make(chan store.Rejected, QueueSize), dropped: dropped}
}

// Keep queues r and returns at once; it reports whether r was queued.
func (k *Keeper) Keep(r store.Rejected) bool {
	if k.keep < 1 {
		return false
	}
	select {
	case k.queue <- r:
		return true
	default:
		k.dropped()
		return false
	}
}

// Run writes queued entries until ctx ends, then writes what is still
// queued and returns nil.
func (k *Keeper) Run(ctx context.Context) error {
	for {
		select {
		case r := <-k.queue:
			k.write(k.drain(r))
		case <-ctx.Done():
			for {
				select {
				case r := <-k.queue:
					k.write(k.drain(r))
				default:
					return nil
				}
			}
		}
	}
}

// drain returns first and everything else waiting.
func (k *Keeper) drain(first store.Rejected) []store.Rejected {
	rs := []store.Rejected{first}
	for {
		select {
		case r := <-k.queue:
			rs = append(rs, r)
		default:
			return rs
		}
	}
}

func (k *Keeper) write(rs []store.Rejected) {
	if err := k.save.KeepRejected(rs, k.keep); err != nil {
		k.log.Warn().Str("event", "rejected_keep_failed").Int("entries", len(rs)).Err(err).
			Msg("rejected deliveries could not be kept for batchhook verify --rejected; they are still counted and logged")
	}
}
