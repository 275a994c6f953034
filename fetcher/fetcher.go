// Package fetcher turns queued batches into exports: exactly FETCH_WORKERS
// workers lease a batch from the store, page its results from the
// provider's API, stage each page durably through a Stager, checkpoint the
// cursor after every page, and publish the export at the end. A crash
// resumes at the next page with nothing lost or written twice.
//
// It never handles an HTTP request: it learns of work from the store.
package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// Queue is what the fetcher needs from the store. Every method is one
// durable transaction; errors are the store's (store.ErrNotFound,
// store.ErrState) wrapped with context.
type Queue interface {
	Lease(now time.Time) (*store.Batch, time.Time, error)
	// Checkpoints commits several batches' checkpoints in one transaction;
	// errs[i] is ups[i]'s outcome (see store.Store.Checkpoints).
	Checkpoints(ups []store.CheckpointUpdate, now time.Time) (errs []error)
	Retry(id string, at time.Time, kind, reason string, countAttempt bool, now time.Time) error
	Restart(id string, at time.Time, kind, reason string, now time.Time) error
	Finish(id string, state store.State, exportPath, reason string, version int, now time.Time) error
	Wakeups() <-chan struct{}
}

var _ Queue = (*store.Store)(nil)

// Stager stages and publishes the results of batches: the export
// directory (*export.Dir) implements it. It is not a delivery sink: a sink
// only ever reads an export once the Stager has published it. The fetcher
// owns the order of operations (append, checkpoint, publish); the stager
// owns the bytes on disk. Errors are the file system's, wrapped with
// context.
type Stager interface {
	// Published returns the path of a complete export of batchID already in
	// place (its manifest matches its results, and its directory entry is
	// synced), when it was exported and its version (-1 when its manifest
	// predates versions), or ok=false.
	Published(batchID string) (path string, exportedAt time.Time, version int, ok bool, err error)
	// Staged returns how many bytes of results are staged for batchID
	// (0 when none).
	Staged(batchID string) (int64, error)
	// Append writes items, one compact JSON value a line, at offset (cutting
	// anything staged beyond it: a page written but never checkpointed), and
	// syncs them to disk before returning the new staged length.
	Append(batchID string, offset int64, items []json.RawMessage) (int64, error)
	// Publish writes the manifest for b and makes the export appear
	// atomically and durably; it returns the export's path and version.
	// When b.Refetch is set the new export replaces an existing one
	// atomically, as the next version; otherwise an existing complete
	// export is kept (and its version returned).
	Publish(b store.Batch, exportedAt time.Time) (path string, version int, err error)
	// Discard removes whatever is staged for batchID (nothing staged is
	// not an error): a batch that ends without publishing must not leave
	// personal data behind.
	Discard(batchID string) error
}

// Pager reads one page; *Client implements it.
type Pager interface {
	Page(ctx context.Context, batchID, cursor string) (*Page, error)
}

var _ Pager = (*Client)(nil)

// Options configures a Fetcher.
type Options struct {
	Queue   Queue
	Stager  Stager
	Pager   Pager
	Logger  zerolog.Logger
	Workers int // 0 pauses fetching
	// Retention: a batch not exported this long after its completed_at (or
	// its receipt, when completed_at is unknown) is abandoned.
	Retention     time.Duration
	NotFoundGrace time.Duration
	// PageLimit is the limit asked of each page (BATCHHOOK_PAGE_LIMIT); it
	// sets how many pages a batch may take (see pageCap). 0 = unknown: the
	// cap then allows one item a page.
	PageLimit   int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// IdlePoll bounds how long an idle loop sleeps without a wakeup; 0 = 1m.
	IdlePoll time.Duration
	Now      func() time.Time // nil = time.Now
	Jitter   func() float64   // nil = math/rand/v2
	// Observer is told of pages, failures and finished batches; nil = none.
	Observer Observer
}

// Observer receives the fetcher's events for the metrics.
type Observer interface {
	PageFetched()
	FetchFailed(kind string)
	BatchFinished(state string, items int64)
}

type nopObserver struct{}

func (nopObserver) PageFetched()                {}
func (nopObserver) FetchFailed(string)          {}
func (nopObserver) BatchFinished(string, int64) {}

// Fetcher is the worker pool.
type Fetcher struct {
	o     Options
	log   zerolog.Logger
	ckpts *checkpoints
}

// New returns a Fetcher; Run starts it.
func New(o Options) (*Fetcher, error) {
	if o.Queue == nil || o.Stager == nil || o.Pager == nil {
		return nil, errors.New("fetcher: Queue, Stager and Pager are required")
	}
	if o.Workers < 0 || o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase || o.Retention <= 0 {
		return nil, errors.New("fetcher: bad Workers, backoff or Retention")
	}
	if o.IdlePoll <= 0 {
		o.IdlePoll = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return &Fetcher{o: o, log: o.Logger, ckpts: &checkpoints{q: o.Queue, now: o.Now}}, nil
}

// Run leases due batches and processes each on one of Workers goroutines
// until ctx ends; then it waits for the workers, which put their batch back
// in the queue at its last checkpoint. It returns nil on a clean stop.
func (f *Fetcher) Run(ctx context.Context) error {
	if f.o.Workers == 0 {
		f.log.Warn().Str("event", "fetch_paused").Msg("BATCHHOOK_FETCH_WORKERS=0: fetching is paused")
		<-ctx.Done()
		return nil
	}
	slots := make(chan struct{}, f.o.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		b, next, err := f.o.Queue.Lease(f.o.Now())
		if err == nil && b != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				f.process(ctx, b)
			}()
			continue
		}
		<-slots
		wait := f.o.IdlePoll
		if err != nil {
			f.log.Error().Str("event", "lease_failed").Err(err).Msg("could not lease a batch")
			wait = f.o.BackoffBase
		} else if !next.IsZero() {
			wait = min(max(next.Sub(f.o.Now()), time.Millisecond), f.o.IdlePoll)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-f.o.Queue.Wakeups():
		case <-timer.C:
		}
		timer.Stop()
	}
}

// RunOnce leases one due batch and processes it synchronously; it reports
// whether there was one. Tests drive the fetcher through it.
func (f *Fetcher) RunOnce(ctx context.Context) (bool, error) {
	b, _, err := f.o.Queue.Lease(f.o.Now())
	if err != nil || b == nil {
		return false, err
	}
	f.process(ctx, b)
	return true, nil
}

// process takes a leased batch to its next state: exported, abandoned, or
// back to queued with a reason and a time.
func (f *Fetcher) process(ctx context.Context, b *store.Batch) {
	log := f.log.With().Str("batch_id", b.ID).Logger()
	// A complete export in place always wins, whatever the clock says,
	// unless an operator asked for a refetch after it was made.
	path, exportedAt, version, ok, err := f.o.Stager.Published(b.ID)
	if err != nil {
		f.fail(ctx, log, b, &Error{Kind: KindLocal, Err: fmt.Errorf("check the export in place: %w", err)})
		return
	}
	if ok && (!b.Refetch || !exportedAt.Before(b.RefetchAt)) {
		if version < 0 { // a manifest from before versions: the store's stands
			version = b.Version()
		}
		f.exported(ctx, log, b, path, version, true)
		return
	}
	// Retention bounds what the provider keeps; a batch whose every page
	// is staged (checkpoint done) needs nothing from it and is published.
	if start := b.RetentionStart(); !b.Checkpoint.Done && f.o.Now().Sub(start) > f.o.Retention {
		f.giveUp(ctx, log, b, fmt.Sprintf("retention elapsed: not exported within %s of %s", f.o.Retention, start.UTC().Format(time.RFC3339)))
		return
	}
	path, version, err = f.fetch(ctx, log, b)
	if err == nil {
		f.exported(ctx, log, b, path, version, false)
		return
	}
	if ctx.Err() != nil {
		// Shutdown: back to the queue at the last checkpoint, no penalty.
		if rerr := f.o.Queue.Retry(b.ID, f.o.Now(), "", "", false, f.o.Now()); rerr != nil {
			log.Error().Str("event", "release_failed").Err(rerr).Msg("could not release batch at shutdown; it is released at next start")
		}
		return
	}
	f.fail(ctx, log, b, err)
}

// fetch pages the batch from its checkpoint to the end and publishes it.
func (f *Fetcher) fetch(ctx context.Context, log zerolog.Logger, b *store.Batch) (string, int, error) {
	staged, err := f.o.Stager.Staged(b.ID)
	if err != nil {
		return "", 0, fmt.Errorf("read staging: %w", err)
	}
	if staged < b.Checkpoint.StagedBytes {
		log.Warn().Str("event", "staging_lost").Int64("staged_bytes", staged).Int64("checkpoint_bytes", b.Checkpoint.StagedBytes).
			Msg("staged results shorter than the checkpoint; fetching the batch from the first page")
		b.Checkpoint = store.Checkpoint{}
		if err := f.ckpts.commit(b.ID, b.Checkpoint); err != nil {
			return "", 0, fmt.Errorf("reset checkpoint: %w", err)
		}
	}
	cp := b.Checkpoint
	if cp.Done && staged > cp.StagedBytes {
		// Cut bytes staged after the last checkpoint before publishing.
		if _, err := f.o.Stager.Append(b.ID, cp.StagedBytes, nil); err != nil {
			return "", 0, fmt.Errorf("cut staging to checkpoint: %w", err)
		}
	}
	lim := f.limits(b)
	// The page after the one being staged is read ahead (prefetch.go);
	// on the way out it is cancelled and waited for.
	// The previous page's checkpoint commits while this page is staged
	// (checkpoint.go); settle waits for it.
	readCtx, cancel := context.WithCancel(ctx)
	var (
		next1 *prefetch
		prev  *committing
	)
	defer func() {
		cancel()
		next1.wait()
		_ = prev.wait() // an error here is already the fetch's, or moot
	}()
	settle := func() error {
		if err := prev.wait(); err != nil {
			return fmt.Errorf("checkpoint page %d: %w", prev.cp.Pages, err)
		}
		if prev != nil {
			b.Checkpoint = prev.cp
			f.o.Observer.PageFetched()
			log.Debug().Str("event", "page_fetched").Int64("page", prev.cp.Pages).Int("items", prev.items).Msg("page staged")
		}
		prev = nil
		return nil
	}
	for !cp.Done {
		if cp.Pages >= lim.pages {
			return "", 0, lim.tooManyPages()
		}
		if err := ctx.Err(); err != nil {
			// Stopping: a page already read ahead is not staged.
			return "", 0, fmt.Errorf("fetch page %d: %w", cp.Pages+1, err)
		}
		var page *Page
		if next1 != nil {
			page, err = next1.take()
			next1 = nil
		} else {
			page, err = f.o.Pager.Page(readCtx, b.ID, cp.Cursor)
		}
		if err != nil {
			return "", 0, fmt.Errorf("fetch page %d: %w", cp.Pages+1, err)
		}
		if cp.Items+int64(len(page.Items)) > maxItems {
			return "", 0, restartError(fmt.Errorf("page %d brings the batch to %d items, more than the %d a batch can hold", cp.Pages+1, cp.Items+int64(len(page.Items)), maxItems))
		}
		next := store.Checkpoint{StagedBytes: cp.StagedBytes, Items: cp.Items + int64(len(page.Items)), Pages: cp.Pages + 1, Done: page.Next == nil, Seen: cp.Seen}
		if page.Next != nil {
			if *page.Next == cp.Cursor || seen(cp.Seen, *page.Next) {
				return "", 0, restartError(fmt.Errorf("page %d: next_cursor repeats a cursor this batch was already given (a cursor cycle)", cp.Pages+1))
			}
			next.Cursor, next.Seen = *page.Next, remember(cp.Seen, *page.Next)
			if next.Pages < lim.pages {
				next1 = ahead(readCtx, f.o.Pager, b.ID, next.Cursor)
			}
		}
		size, err := f.o.Stager.Append(b.ID, cp.StagedBytes, page.Items)
		if err != nil {
			return "", 0, fmt.Errorf("stage page %d: %w", cp.Pages+1, err)
		}
		if err := settle(); err != nil {
			return "", 0, err
		}
		if err := ctx.Err(); err != nil {
			// Stopping: this page stays beyond the checkpoint, cut on resume.
			return "", 0, fmt.Errorf("checkpoint page %d: %w", next.Pages, err)
		}
		next.StagedBytes = size
		prev = f.ckpts.start(b.ID, next, len(page.Items))
		cp = next
	}
	if err := settle(); err != nil {
		return "", 0, err
	}
	path, version, err := f.o.Stager.Publish(*b, f.o.Now().UTC())
	if err != nil {
		return "", 0, fmt.Errorf("publish export: %w", err)
	}
	return path, version, nil
}
