package fetcher

import "context"

// prefetch is one page requested ahead: while page N is written, synced
// and checkpointed, page N+1 is already on its way, so a worker waits on
// the disk and the network at the same time instead of one after the
// other. Nothing about durability changes: a page is still staged only
// after the previous one's checkpoint committed, in order, and a page read
// ahead but never staged is simply read again after a crash.
type prefetch struct {
	done chan struct{}
	page *Page
	err  error
}

// ahead starts reading the page at cursor; take returns it.
func ahead(ctx context.Context, p Pager, batchID, cursor string) *prefetch {
	pf := &prefetch{done: make(chan struct{})}
	go func() {
		defer close(pf.done)
		pf.page, pf.err = p.Page(ctx, batchID, cursor)
	}()
	return pf
}

// take waits for the page.
func (pf *prefetch) take() (*Page, error) {
	<-pf.done
	return pf.page, pf.err
}

// wait lets a page read ahead finish (its context is cancelled first by
// the caller), so that no request outlives the fetch that made it.
func (pf *prefetch) wait() {
	if pf != nil {
		<-pf.done
	}
}
