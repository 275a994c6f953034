package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/batchhook/batchhook/internal/testutil"
)

// browser is one headless Chromium with one tab, on the console at base.
type browser struct {
	t    *testing.T
	tab  context.Context
	base string
	// shots is where screenshots go.
	shots string
	log   *testutil.SyncBuffer
}

// newBrowser starts Chromium (bin) with a fresh profile; it ends with the
// test.
func newBrowser(t *testing.T, bin, base string) *browser {
	t.Helper()
	log := &testutil.SyncBuffer{}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests may run as root, where the sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.CombinedOutput(log),
	)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, tab: tab, base: base, shots: shots(t), log: log}
	if err := chromedp.Do(tab); err != nil { // starts the browser, bound to no timeout
		t.Fatalf("start chromium %s: %v\n%s", bin, err, log.String())
	}
	t.Logf("screenshots in %s", b.shots)
	return b
}

// ctx is the tab's context bounded by waitBound, for one action.
func (b *browser) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.tab, waitBound)
}

// run runs one action with a value on the tab.
func run[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// do runs actions with no value on the tab.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to path and returns the document's response (after
// any redirects).
func (b *browser) open(t *testing.T, path string) *network.Response {
	t.Helper()
	return run(t, b, "open "+path, chromedp.NavigateResponse(b.base+path))
}

// click clicks the element sel selects, waits for the page it leads to
// and returns that page's response.
func (b *browser) click(t *testing.T, sel string) *network.Response {
	t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	return resp
}

// text is the text content of the element sel selects.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return strings.TrimSpace(run(t, b, "text of "+sel, chromedp.TextContent(chromedp.CSS(sel))))
}

// path is the current page's path and query.
func (b *browser) path(t *testing.T) string {
	t.Helper()
	return strings.TrimPrefix(run(t, b, "location", chromedp.Location()), b.base)
}

// cookie returns the session cookie the browser holds for the console,
// or nil.
func (b *browser) cookie(t *testing.T) *network.Cookie {
	t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/ui/"}})
	if err != nil {
		t.Fatalf("cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == cookieName {
			return c
		}
	}
	return nil
}

// shot saves a full-page PNG of the current page as name.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	png := run(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
