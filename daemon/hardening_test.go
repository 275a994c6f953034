package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/store"
)

// emptyPages answers every page with no items and a new cursor: a
// provider whose cursor never ends.
type emptyPages struct{ requests atomic.Int32 }

func (p *emptyPages) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := p.requests.Add(1)
	fmt.Fprintf(w, `{"items":[],"next_cursor":"c%d"}`, n)
}

// PAGE_LIMIT reaches the fetcher's page cap: 70 requested items at 7 a page
// allow 2×10+10 = 30 pages.
func TestPageLimitSetsThePageCap(t *testing.T) {
	p := &emptyPages{}
	// No second round within the test: the cap's error is retried after
	// the backoff, and a round begun before the count is read would make
	// it no whole number of rounds.
	d, _ := wiredDaemon(t, p, func(c *config.Config) { c.BackoffBase, c.BackoffMax = time.Hour, time.Hour })
	body := []byte(`{"event":"batch.completed","batch_id":"b_endless","status":"completed","total_requested":70,"total_found":70,"total_not_found":0,"completed_at":"` +
		time.Now().UTC().Format(time.RFC3339) + `"}`)
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.Addr().String()+d.cfg.WebhookPath, bytes.NewReader(body))
	req.Header.Set(signature.Header, signature.Sign([]byte("s"), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := d.Batch("b_endless")
		if err == nil && b.ErrorKind == "protocol" {
			if !strings.Contains(b.LastError, "more than 30 pages") {
				t.Fatalf("last_error %q, want the 30-page cap", b.LastError)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no protocol error after %d requests: %+v", p.requests.Load(), b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.requests.Load(); got < 30 || got%30 != 0 {
		t.Fatalf("%d page requests, want whole rounds of 30", got)
	}
}

// Start puts back an export that a replace cut short left only aside.
func TestStartRestoresAnExportLeftAside(t *testing.T) {
	root := filepath.Join(t.TempDir(), "exports")
	sink, err := export.New(root)
	if err != nil {
		t.Fatal(err)
	}
	n, err := sink.Append("b_aside", 0, []json.RawMessage{json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	final, _, err := sink.Publish(store.Batch{ID: "b_aside", Checkpoint: store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: n}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(final, filepath.Join(root, ".partial", ".old.b_aside")); err != nil {
		t.Fatal(err)
	}
	wiredDaemon(t, &emptyPages{}, func(c *config.Config) { c.ExportDir = root })
	if ok, err := export.Verify(final); !ok || err != nil {
		t.Fatalf("the export was not put back at start: %v", err)
	}
}
