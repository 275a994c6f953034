package export

// Power cuts at every request of each change to a published export, on
// the test-only file system that keeps only what was synced: whatever the
// moment, a reader finds the old export whole or the new one whole (or
// none, where none is a state the change passes through on purpose), and a
// change that returned nil is durable.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/powerloss"
)

// exportState is what a reader finds at a batch's export: "missing",
// "incomplete: why", or "v<version> <lines joined by |>".
func exportState(root, id string) string {
	dir := filepath.Join(root, id)
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return "missing"
		}
		return "incomplete: no manifest"
	}
	if err != nil {
		return "incomplete: " + err.Error()
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return "incomplete: manifest " + err.Error()
	}
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return "incomplete: " + err.Error()
	}
	sum := sha256.Sum256(data)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	if m.SHA256 != hex.EncodeToString(sum[:]) || m.Items != int64(len(lines)) || m.BatchID != id {
		return fmt.Sprintf("incomplete: manifest says %d items %s, file has %d", m.Items, m.SHA256, len(lines))
	}
	return fmt.Sprintf("v%d %s", m.VersionOr(-1), strings.Join(lines, "|"))
}

// cutCase is one change to an export: set up (durably) what it starts
// from, run it, and the states a reader may find after a cut at any
// moment of it (done: it returned nil before the cut).
type cutCase struct {
	name    string
	setup   func(t *testing.T, d *Dir)
	run     func(d *Dir) error
	allowed func(state string, done bool) bool
	// settle, when set, runs after Recover on the next start (the
	// daemon's retry) and must leave want in place and .partial empty.
	settle func(d *Dir) error
	want   string
}

const cutID = "b_1f:r1" // ':' as in the ids of refetched batches

var (
	oldState = "v0 " + itemA1 + "|" + itemB
	newItems = []string{itemB, itemNoCP}
)

func cutCases() []cutCase {
	published := func(t *testing.T, d *Dir) {
		t.Helper()
		if _, err := stageAndPublish(d, cutID, false, itemA1, itemB); err != nil {
			t.Fatal(err)
		}
	}
	erase := func(d *Dir) error { _, _, _, err := d.Erase(cutID, 0, "cpf", matchA, nil); return err }
	oldOrNew := func(newState string) func(string, bool) bool {
		return func(s string, done bool) bool { return s == newState || !done && s == oldState }
	}
	twoRenames := func(c cutCase) cutCase {
		c.name += ", without RENAME_EXCHANGE"
		setup := c.setup
		c.setup = func(t *testing.T, d *Dir) { d.exchange = noExchange; setup(t, d) }
		return c
	}
	cs := []cutCase{
		{
			name:  "first publish",
			setup: func(*testing.T, *Dir) {},
			run:   func(d *Dir) error { _, err := stageAndPublish(d, cutID, false, itemA1, itemB); return err },
			allowed: func(s string, done bool) bool {
				return s == oldState || !done && s == "missing"
			},
		},
		{
			name:    "refetch replaces the export",
			setup:   published,
			run:     func(d *Dir) error { _, err := stageAndPublish(d, cutID, true, newItems...); return err },
			allowed: oldOrNew("v1 " + strings.Join(newItems, "|")),
		},
		{
			name:    "erasure rewrites the export",
			setup:   published,
			run:     erase,
			allowed: oldOrNew("v1 " + itemB),
			settle:  erase,
			want:    "v1 " + itemB,
		},
		{
			name:  "purge",
			setup: published,
			run:   func(d *Dir) error { return d.Purge(cutID) },
			allowed: func(s string, done bool) bool {
				return s == "missing" || !done && s == oldState
			},
			settle: func(d *Dir) error { return d.Purge(cutID) },
			want:   "missing",
		},
		{
			name:  "removal after delivery",
			setup: published,
			run:   func(d *Dir) error { return d.Remove(cutID) },
			allowed: func(s string, done bool) bool {
				return s == "missing" || !done && s == oldState
			},
		},
	}
	// Another batch's work syncs .partial whenever it likes: right after
	// the swap, before the root's sync, it would make the old export's
	// new name there durable while the root still names the old export,
	// and the cut would keep the old export in .partial, not in the root.
	busyPartial := func(c cutCase) cutCase {
		c.name += ", .partial synced by another batch at the swap"
		setup := c.setup
		c.setup = func(t *testing.T, d *Dir) {
			setup(t, d)
			d.afterSwap = func() {
				if !d.swapping.TryRLock() {
					// Held for the swap, as it must be: the other
					// batch's sync comes once the root is synced.
					go d.Discard("b_other")
					return
				}
				d.swapping.RUnlock()
				d.Discard("b_other") // nothing holds it back: it syncs now
			}
		}
		return c
	}
	// The fallback's two renames leave a moment with no export at all,
	// which Recover ends by putting the old one back.
	// A first publish cut short keeps its staged results (or the export):
	// the fetcher publishes them at the next start without fetching again.
	// Here the results are staged (durably) before the change.
	var root string
	var staged int64
	first := busyPartial(cutCase{
		name: "first publish of staged results",
		setup: func(t *testing.T, d *Dir) {
			t.Helper()
			root = d.Root()
			var err error
			if staged, err = d.Append(cutID, 0, raws(itemA1, itemB)); err != nil {
				t.Fatal(err)
			}
		},
		run: func(d *Dir) error {
			_, _, err := d.Publish(fetched(cutID, false, 2, staged), time.Now())
			return err
		},
		allowed: func(s string, done bool) bool {
			if s == oldState {
				return true
			}
			kept, _ := os.ReadFile(filepath.Join(root, partialDir, cutID, ResultsFile))
			return !done && s == "missing" && string(kept) == itemA1+"\n"+itemB+"\n"
		},
	})
	return append(cs, twoRenames(cs[1]), twoRenames(cs[2]), first, busyPartial(cs[1]), busyPartial(cs[2]))
}

func TestAPowerCutAtAnyRequestLeavesAWholeExport(t *testing.T) {
	for _, c := range cutCases() {
		t.Run(c.name, func(t *testing.T) {
			fs := powerloss.MountTest(t, powerloss.Options{})
			open := func(name string) *Dir {
				t.Helper()
				d, err := New(filepath.Join(fs.Dir(), name, "exports"))
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			// A run without a cut counts the change's mutating requests.
			d := open("count")
			c.setup(t, d)
			before := fs.Ops()
			if err := c.run(d); err != nil {
				t.Fatalf("without a cut: %v", err)
			}
			total := fs.Ops() - before
			if total < 3 {
				t.Fatalf("the change made %d mutating requests: the count is wrong", total)
			}
			for n := int64(0); n <= total; n++ {
				name := fmt.Sprintf("cut%03d", n)
				d := open(name)
				c.setup(t, d)
				done := cutAfter(t, fs, n, func() error { return c.run(d) })
				d = open(name) // the next start
				if _, err := d.Recover(); err != nil {
					t.Fatalf("cut after %d of %d requests: Recover: %v", n, total, err)
				}
				state := exportState(d.Root(), cutID)
				if !c.allowed(state, done) {
					t.Fatalf("cut after %d of %d requests (the change returned: %v): a reader finds %q", n, total, done, state)
				}
				if c.settle == nil {
					continue
				}
				if err := c.settle(d); err != nil {
					t.Fatalf("cut after %d of %d requests: done again after the restart: %v", n, total, err)
				}
				if state := exportState(d.Root(), cutID); state != c.want {
					t.Fatalf("cut after %d of %d requests: after the restart's retry a reader finds %q, want %q", n, total, state, c.want)
				}
				if left := partialNames(t, d); len(left) > 0 {
					t.Fatalf("cut after %d of %d requests: .partial holds %v after the retry (personal data)", n, total, left)
				}
			}
		})
	}
}

// cutAfter runs change with the file system frozen after n mutating
// requests, cuts the power once the change has returned or waits on the
// freeze, and says whether it returned nil before the cut.
func cutAfter(t *testing.T, fs *powerloss.FS, n int64, change func() error) (done bool) {
	t.Helper()
	frozen := fs.FreezeAfter(n)
	result := make(chan error, 1)
	go func() { result <- change() }()
	var err error
	returned := false
	deadline := time.Now().Add(30 * time.Second)
	for !returned {
		select {
		case err = <-result:
			returned = true
			continue
		case <-time.After(time.Millisecond):
		}
		select {
		case <-frozen:
			if fs.Waiting() > 0 {
				goto cut
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("cut after %d requests: the change neither returned nor waited on the freeze in 30s", n)
		}
	}
cut:
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
	if !returned {
		err = <-result
	}
	return returned && err == nil
}

// The cases above hold only if the cut really lands inside the change.
func TestPowerCutCasesSeeTheChangeCutShort(t *testing.T) {
	fs := powerloss.MountTest(t, powerloss.Options{})
	d, err := New(filepath.Join(fs.Dir(), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stageAndPublish(d, cutID, false, itemA1, itemB); err != nil {
		t.Fatal(err)
	}
	if done := cutAfter(t, fs, 1, func() error { _, err := stageAndPublish(d, cutID, true, newItems...); return err }); done {
		t.Fatal("a refetch cut after its first request returned nil")
	}
	if got := exportState(d.Root(), cutID); got != oldState {
		t.Fatalf("after a refetch cut after its first request: %q, want the old export", got)
	}
	if !slices.Contains([]string{"missing"}, exportState(d.Root(), "b_none")) {
		t.Fatal("exportState of a batch never published is not missing")
	}
}
