package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/batchhook/batchhook/store"
)

// These tests reach the unexported exchange, to play a file system without
// RENAME_EXCHANGE (reproduced with
// strace -e inject=renameat2:error=EINVAL).

func noExchange(*os.File, string, *os.File, string) error { return unix.EINVAL }

func newTestDir(t *testing.T) *Dir {
	t.Helper()
	d, err := New(filepath.Join(t.TempDir(), "exports"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// publish stages items and publishes them as batch id (a refetch when
// refetch is set).
func publish(t *testing.T, d *Dir, id string, refetch bool, items ...string) string {
	t.Helper()
	path, err := stageAndPublish(d, id, refetch, items...)
	if err != nil {
		t.Fatalf("stage and publish (refetch %v): %v", refetch, err)
	}
	return path
}

// stageAndPublish is publish returning its error: a power cut may end it.
func stageAndPublish(d *Dir, id string, refetch bool, items ...string) (string, error) {
	n, err := d.Append(id, 0, raws(items...))
	if err != nil {
		return "", err
	}
	path, _, err := d.Publish(fetched(id, refetch, len(items), n), time.Now())
	return path, err
}

// fetched is batch id with its items (staged bytes) all fetched.
func fetched(id string, refetch bool, items int, staged int64) store.Batch {
	return store.Batch{ID: id, Refetch: refetch, Notification: store.Notification{BatchID: id},
		Checkpoint: store.Checkpoint{Done: true, Items: int64(items), Pages: 1, StagedBytes: staged}}
}

// raws is items as JSON values.
func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

func results(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func partialNames(t *testing.T, d *Dir) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(d.Root(), partialDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// copyExport copies a published export to dst, as a replace that stopped
// half-way leaves it.
func copyExport(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ResultsFile, ManifestFile} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Without RENAME_EXCHANGE, an old export left aside by an
// earlier replace blocked every later refetch. With RENAME_EXCHANGE the
// stale copy is cleared too: it is personal data.
func TestReplaceClearsWhatAnEarlierReplaceLeftAside(t *testing.T) {
	for _, aside := range []string{asideName("b-1"), "b-1" + legacySuffix} {
		for _, withExchange := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s exchange=%v", aside, withExchange), func(t *testing.T) {
				testReplaceClearsAside(t, aside, withExchange)
			})
		}
	}
}

func testReplaceClearsAside(t *testing.T, aside string, withExchange bool) {
	d := newTestDir(t)
	if !withExchange {
		d.exchange = noExchange
	}
	final := publish(t, d, "b-1", false, `{"v":1}`)
	copyExport(t, final, filepath.Join(d.Root(), partialDir, aside))
	for v := 2; v <= 3; v++ {
		item := fmt.Sprintf(`{"v":%d}`, v)
		if got := publish(t, d, "b-1", true, item); got != final {
			t.Fatalf("refetch %d published at %s", v, got)
		}
		if got := results(t, final); got != item+"\n" {
			t.Fatalf("after refetch %d the export holds %q", v, got)
		}
	}
	if names := partialNames(t, d); len(names) != 0 {
		t.Fatalf("staging left behind: %v", names)
	}
}

// A replace that stops between its two renames leaves the only complete
// copy aside: Recover puts it back instead of deleting it, and removes an
// aside copy whose replacement was published.
func TestRecoverRestoresTheOnlyCopyAndRemovesStaleOnes(t *testing.T) {
	d := newTestDir(t)
	for _, id := range []string{"lost-1", "lost-2", "stale-1", "stale-2"} {
		publish(t, d, id, false, `{"id":"`+id+`"}`)
	}
	partial := filepath.Join(d.Root(), partialDir)
	// lost-*: the old export was moved aside, the new one never moved in.
	if err := os.Rename(d.Path("lost-1"), filepath.Join(partial, asideName("lost-1"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(d.Path("lost-2"), filepath.Join(partial, "lost-2"+legacySuffix)); err != nil {
		t.Fatal(err)
	}
	// stale-*: the replacement is published, the old copy was not removed.
	copyExport(t, d.Path("stale-1"), filepath.Join(partial, asideName("stale-1")))
	copyExport(t, d.Path("stale-2"), filepath.Join(partial, "stale-2"+legacySuffix))
	// The staging of a batch whose id ends in ".old" is not an aside copy.
	raw := []json.RawMessage{json.RawMessage(`{"x":1}`)}
	if _, err := d.Append("x.old", 0, raw); err != nil {
		t.Fatal(err)
	}

	r, err := d.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Restored, ",") != "lost-1,lost-2" || strings.Join(r.Removed, ",") != "stale-1,stale-2" {
		t.Fatalf("Recover = %+v", r)
	}
	for _, id := range []string{"lost-1", "lost-2", "stale-1", "stale-2"} {
		if _, _, _, ok, err := d.Published(id); !ok || err != nil {
			t.Errorf("%s not published after Recover: %v", id, err)
		}
		if got := results(t, d.Path(id)); got != `{"id":"`+id+`"}`+"\n" {
			t.Errorf("%s holds %q", id, got)
		}
	}
	if names := partialNames(t, d); strings.Join(names, ",") != "x.old" {
		t.Fatalf(".partial after Recover: %v, want only x.old", names)
	}
}

// Discard removes a batch's staging, and only its own.
func TestDiscardRemovesTheStaging(t *testing.T) {
	d := newTestDir(t)
	raw := []json.RawMessage{json.RawMessage(`{"cpf":"52998224725"}`)}
	for _, id := range []string{"b-1", "b-2"} {
		if _, err := d.Append(id, 0, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Discard("b-1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard("never-staged"); err != nil {
		t.Fatalf("Discard of nothing: %v", err)
	}
	if names := partialNames(t, d); strings.Join(names, ",") != "b-2" {
		t.Fatalf(".partial = %v, want only b-2", names)
	}
}

// A link planted under the export root is never
// followed; the error names it and nothing is written outside the root.
func TestPlantedLinksAreRefused(t *testing.T) {
	raw := []json.RawMessage{json.RawMessage(`{"cpf":"52998224725"}`)}
	cases := []struct {
		name  string
		plant func(t *testing.T, d *Dir, outside string) string // returns the planted path
	}{
		{"staging dir links to a directory outside", func(t *testing.T, d *Dir, outside string) string {
			p := filepath.Join(d.Root(), partialDir, "b-1")
			mustSymlink(t, outside, p)
			return p
		}},
		{"staging dir links to a file outside", func(t *testing.T, d *Dir, outside string) string {
			target := filepath.Join(outside, "victim")
			if err := os.WriteFile(target, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(d.Root(), partialDir, "b-1")
			mustSymlink(t, target, p)
			return p
		}},
		{"staged results link to a file outside", func(t *testing.T, d *Dir, outside string) string {
			target := filepath.Join(outside, "victim")
			if err := os.WriteFile(target, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(d.Root(), partialDir, "b-1")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, ResultsFile)
			mustSymlink(t, target, p)
			return p
		}},
		{"staged results are a hard link to a file outside", func(t *testing.T, d *Dir, outside string) string {
			target := filepath.Join(outside, "victim")
			if err := os.WriteFile(target, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(d.Root(), partialDir, "b-1")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, ResultsFile)
			if err := os.Link(target, p); err != nil {
				t.Skipf("hard link across the temp dirs: %v", err)
			}
			return p
		}},
		{".partial links to a directory outside", func(t *testing.T, d *Dir, outside string) string {
			p := filepath.Join(d.Root(), partialDir)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, outside, p)
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDir(t)
			outside := t.TempDir()
			planted := c.plant(t, d, outside)
			_, err := d.Append("b-1", 0, raw)
			if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), planted) {
				t.Fatalf("Append through %s: %v, want ErrUnsafePath naming it", planted, err)
			}
			if _, err := d.Staged("b-1"); !errors.Is(err, ErrUnsafePath) {
				t.Errorf("Staged through %s: %v, want ErrUnsafePath", planted, err)
			}
			assertUntouched(t, outside)
		})
	}
}

// A link in place of a published export is neither an export nor
// replaced through.
func TestALinkInPlaceOfTheExportIsRefused(t *testing.T) {
	d := newTestDir(t)
	outside := t.TempDir()
	copyExport(t, publish(t, newTestDir(t), "b-1", false, `{"v":1}`), filepath.Join(outside, "b-1"))
	mustSymlink(t, filepath.Join(outside, "b-1"), d.Path("b-1"))
	if _, _, _, ok, err := d.Published("b-1"); ok || !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Published through a link = %v, %v; want ErrUnsafePath", ok, err)
	}
	raw := []json.RawMessage{json.RawMessage(`{"v":2}`)}
	n, err := d.Append("b-1", 0, raw)
	if err != nil {
		t.Fatal(err)
	}
	b := store.Batch{ID: "b-1", Refetch: true, Checkpoint: store.Checkpoint{Done: true, Items: 1, StagedBytes: n}}
	if _, _, err := d.Publish(b, time.Now()); !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), d.Path("b-1")) {
		t.Fatalf("Publish over a link: %v, want ErrUnsafePath naming it", err)
	}
	if got := results(t, filepath.Join(outside, "b-1")); got != `{"v":1}`+"\n" {
		t.Fatalf("the link's target changed: %q", got)
	}
}

// Files are 0600 and directories 0700 whatever the umask, and a staged
// file planted with a wider mode is narrowed.
func TestModesIgnoreTheUmask(t *testing.T) {
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	d := newTestDir(t)
	final := publish(t, d, "b-1", false, `{"v":1}`)
	dir := filepath.Join(d.Root(), partialDir, "b-2")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, ResultsFile), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append("b-2", 0, []json.RawMessage{json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		final: 0o700, filepath.Join(final, ResultsFile): 0o600, filepath.Join(final, ManifestFile): 0o600,
		filepath.Join(d.Root(), partialDir): 0o700, filepath.Join(dir, ResultsFile): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), want)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// assertUntouched fails if anything but the test's own "victim" file, still
// empty, exists in dir.
func assertUntouched(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "victim" {
			t.Errorf("written outside the root: %s", filepath.Join(dir, e.Name()))
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || st.Size() != 0 {
			t.Errorf("the file outside the root was written to (%v, %v)", st.Size(), err)
		}
	}
}

// OpenResults reads a published export and refuses a link in its place.
func TestOpenResultsRefusesALink(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, `{"v":1}`)
	rc, err := d.OpenResults("b-1")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != `{"v":1}`+"\n" {
		t.Fatalf("OpenResults read %q", data)
	}
	outside := t.TempDir()
	copyExport(t, d.Path("b-1"), filepath.Join(outside, "b-2"))
	mustSymlink(t, filepath.Join(outside, "b-2"), d.Path("b-2"))
	if _, err := d.OpenResults("b-2"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("OpenResults through a link: %v, want ErrUnsafePath", err)
	}
}

// A manifest planted as a hard link to a file outside is refused before
// anything is cut or written through it.
func TestAHardLinkedManifestIsNotTruncated(t *testing.T) {
	d := newTestDir(t)
	n, err := d.Append("b-1", 0, []json.RawMessage{json.RawMessage(`{"v":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, filepath.Join(d.Root(), partialDir, "b-1", ManifestFile)); err != nil {
		t.Skipf("hard link across the temp dirs: %v", err)
	}
	b := store.Batch{ID: "b-1", Checkpoint: store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: n}}
	if _, _, err := d.Publish(b, time.Now()); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Publish with a hard-linked manifest: %v, want ErrUnsafePath", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep me" {
		t.Fatalf("the file outside the root became %q", data)
	}
}

// A downstream reader or a backup tool may hard-link a published export's
// files: reading them is harmless, so the export still counts as published
// and can be read (refusing it would retry the batch for ever).
func TestAHardLinkedPublishedExportStillReads(t *testing.T) {
	d := newTestDir(t)
	n, err := d.Append("b-1", 0, []json.RawMessage{json.RawMessage(`{"v":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	b := store.Batch{ID: "b-1", Checkpoint: store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: n}}
	path, _, err := d.Publish(b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ResultsFile, ManifestFile} {
		if err := os.Link(filepath.Join(path, f), filepath.Join(d.Root(), "backup-"+f)); err != nil {
			t.Skipf("hard link: %v", err)
		}
	}
	if _, _, _, ok, err := d.Published("b-1"); err != nil || !ok {
		t.Fatalf("Published with hard-linked files: %v %v, want a complete export", ok, err)
	}
	r, err := d.OpenResults("b-1")
	if err != nil {
		t.Fatalf("OpenResults with a hard-linked results file: %v", err)
	}
	r.Close()
}

// An aside copy is removed only when a COMPLETE export stands in its place:
// with a damaged directory at the final name (whatever put it there), the
// aside copy may be the only complete one, and Recover keeps it.
func TestRecoverKeepsTheAsideCopyWhenThePublishedOneIsIncomplete(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, `{"id":"b-1"}`)
	aside := filepath.Join(d.Root(), partialDir, asideName("b-1"))
	copyExport(t, d.Path("b-1"), aside)
	if err := os.WriteFile(filepath.Join(d.Path("b-1"), ResultsFile), []byte("{\"cut\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := d.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Removed) != 0 || strings.Join(r.Kept, ",") != asideName("b-1") {
		t.Fatalf("Recover = %+v; want the aside copy kept", r)
	}
	if got := results(t, aside); got != `{"id":"b-1"}`+"\n" {
		t.Fatalf("the aside copy holds %q", got)
	}
}
