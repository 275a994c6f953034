package fetcher

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/batchhook/batchhook/store"
)

// maxItems is the most items a batch can hold: the provider takes at most
// 1,000 CPFs a batch and answers one item per CPF.
const maxItems = 1000

// Page cap = pageSlackFactor × ceil(expected items / PAGE_LIMIT) +
// pageSlackExtra. The factor lets the provider cut every page to half of
// what was asked; the extra allows a few short or empty pages (an empty
// last page is common). A batch beyond it is not paged for ever: its staged
// pages are dropped and it waits as a protocol error. If the provider
// serves fewer items a page than PAGE_LIMIT asks, set PAGE_LIMIT to what
// it serves.
const (
	pageSlackFactor = 2
	pageSlackExtra  = 10
)

// limits bound one batch's fetch.
type limits struct {
	pages    int64 // most pages the batch may take
	expected int64 // items the batch can hold, as far as batchhook knows
	perPage  int   // PAGE_LIMIT, or 1 when unknown
}

// limits computes the caps for b: the items its notification announced
// (total_requested, at most maxItems; maxItems when unknown or when the
// notification's counters were flagged as inconsistent) at PageLimit a page.
func (f *Fetcher) limits(b *store.Batch) limits {
	l := limits{expected: maxItems, perPage: max(f.o.PageLimit, 1)}
	if tr := b.Notification.TotalRequested; tr != nil && *tr >= 0 && *tr < maxItems && len(b.Notification.Flags) == 0 {
		l.expected = *tr
	}
	per := int64(l.perPage)
	l.pages = pageSlackFactor*((l.expected+per-1)/per) + pageSlackExtra
	return l
}

func (l limits) tooManyPages() error {
	return restartError(fmt.Errorf("more than %d pages for at most %d items at PAGE_LIMIT %d: the cursor never ends",
		l.pages, l.expected, l.perPage))
}

// restartError is a protocol error after which the pages staged so far
// cannot be trusted: the batch is fetched again from the first page.
func restartError(err error) *Error {
	return &Error{Kind: KindProtocol, Err: err, restart: true}
}

// cursorDigestLen is the hex length of one remembered cursor: 8 bytes of
// SHA-256, so that a false "seen" is as likely as a 64-bit collision.
const cursorDigestLen = 16

func cursorDigest(cursor string) string {
	sum := sha256.Sum256([]byte(cursor))
	return hex.EncodeToString(sum[:cursorDigestLen/2])
}

// seen reports whether cursor is among the digests in list.
func seen(list, cursor string) bool {
	d := cursorDigest(cursor)
	for i := 0; i+cursorDigestLen <= len(list); i += cursorDigestLen {
		if list[i:i+cursorDigestLen] == d {
			return true
		}
	}
	return false
}

// remember returns list with cursor's digest added.
func remember(list, cursor string) string {
	var sb strings.Builder
	sb.Grow(len(list) + cursorDigestLen)
	sb.WriteString(list)
	sb.WriteString(cursorDigest(cursor))
	return sb.String()
}
