package export_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

func newDir(t *testing.T) *export.Dir {
	t.Helper()
	d, err := export.New(filepath.Join(t.TempDir(), "nested", "exports"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func stagedPath(d *export.Dir, id string) string {
	return filepath.Join(d.Root(), ".partial", id, export.ResultsFile)
}

func mustAppend(t *testing.T, d *export.Dir, id string, offset int64, items ...string) int64 {
	t.Helper()
	n, err := d.Append(id, offset, raws(items...))
	if err != nil {
		t.Fatalf("Append(%s, %d): %v", id, offset, err)
	}
	return n
}

func notExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: Lstat error %v, want not exist", path, err)
	}
}

func i64(v int64) *int64 { return &v }

// batch builds a finished batch by hand.
func batch(id string, items, pages, staged int64) store.Batch {
	completed := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return store.Batch{
		ID:    id,
		State: store.StateFetching,
		Notification: store.Notification{
			Event: "batch.completed", BatchID: id, Status: "partial",
			TotalRequested: i64(5), TotalFound: i64(3), TotalNotFound: i64(2),
			CompletedAt: &completed,
			ReceivedAt:  time.Date(2026, 11, 22, 10, 0, 3, 500_000_000, time.UTC),
			Source:      store.SourceWebhook,
		},
		Checkpoint: store.Checkpoint{Items: items, Pages: pages, StagedBytes: staged, Done: true},
	}
}

func TestNewCreatesPrivateRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "a", "b")
	d, err := export.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if d.Root() != root {
		t.Errorf("Root = %q, want %q", d.Root(), root)
	}
	if p := perm(t, root); p != 0o700 {
		t.Errorf("root mode %o, want 700", p)
	}
	if got, want := d.Path("b-1"), filepath.Join(root, "b-1"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	// New on an existing root is fine.
	if _, err := export.New(root); err != nil {
		t.Errorf("New on an existing root: %v", err)
	}
}

func TestNewMakesRootAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	d, err := export.New("rel")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(d.Root()) {
		t.Fatalf("Root = %q, not absolute", d.Root())
	}
	a, err := os.Stat(d.Root())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(filepath.Join(dir, "rel"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) {
		t.Errorf("Root %q is not %s/rel", d.Root(), dir)
	}
}

func TestAppendWritesLinesAndReturnsLengths(t *testing.T) {
	d := newDir(t)
	if n, err := d.Staged("b-1"); err != nil || n != 0 {
		t.Fatalf("Staged before any append = %d, %v; want 0, nil", n, err)
	}
	a, b, c := `{"cpf":"1"}`, `{"cpf":"2","nome":"João"}`, `"três"`
	n1 := mustAppend(t, d, "b-1", 0, a, b)
	if want := int64(len(a) + 1 + len(b) + 1); n1 != want {
		t.Errorf("first Append = %d, want %d", n1, want)
	}
	n2 := mustAppend(t, d, "b-1", n1, c)
	if want := n1 + int64(len(c)+1); n2 != want {
		t.Errorf("second Append = %d, want %d", n2, want)
	}
	if got, want := readFile(t, stagedPath(d, "b-1")), a+"\n"+b+"\n"+c+"\n"; got != want {
		t.Errorf("staged = %q, want %q", got, want)
	}
	if n, err := d.Staged("b-1"); err != nil || n != n2 {
		t.Errorf("Staged = %d, %v; want %d", n, err, n2)
	}
	// An empty page adds nothing.
	if n := mustAppend(t, d, "b-1", n2); n != n2 {
		t.Errorf("Append of no items = %d, want %d", n, n2)
	}
	if p := perm(t, stagedPath(d, "b-1")); p != 0o600 {
		t.Errorf("staged file mode %o, want 600", p)
	}
	if p := perm(t, filepath.Dir(stagedPath(d, "b-1"))); p != 0o700 {
		t.Errorf("staging dir mode %o, want 700", p)
	}
	// Nothing is visible at the final path while staging.
	notExist(t, d.Path("b-1"))
	// Batches stage apart.
	mustAppend(t, d, "b-2", 0, `{"other":true}`)
	if got := readFile(t, stagedPath(d, "b-1")); got != a+"\n"+b+"\n"+c+"\n" {
		t.Errorf("another batch changed b-1: %q", got)
	}
}

func TestAppendAtAnEarlierOffsetCutsTheRest(t *testing.T) {
	d := newDir(t)
	n1 := mustAppend(t, d, "b-1", 0, `{"p":1,"i":1}`, `{"p":1,"i":2}`)
	// Page 2 is written but the process dies before its checkpoint.
	n2 := mustAppend(t, d, "b-1", n1, `{"p":2,"i":3}`, `{"p":2,"i":4}`, `{"p":2,"i":5}`)
	if n2 <= n1 {
		t.Fatalf("lengths %d, %d", n1, n2)
	}
	// On resume page 2 comes again, shorter this time.
	n3 := mustAppend(t, d, "b-1", n1, `{"p":2,"i":3}`)
	if want := n1 + int64(len(`{"p":2,"i":3}`)+1); n3 != want {
		t.Errorf("Append after cut = %d, want %d", n3, want)
	}
	want := "{\"p\":1,\"i\":1}\n{\"p\":1,\"i\":2}\n{\"p\":2,\"i\":3}\n"
	if got := readFile(t, stagedPath(d, "b-1")); got != want {
		t.Errorf("staged = %q, want %q", got, want)
	}
	if n, _ := d.Staged("b-1"); n != int64(len(want)) {
		t.Errorf("Staged = %d, want %d", n, len(want))
	}
	// Offset 0 with no items empties the file.
	if n := mustAppend(t, d, "b-1", 0); n != 0 {
		t.Errorf("Append(0, nil) = %d", n)
	}
	if got := readFile(t, stagedPath(d, "b-1")); got != "" {
		t.Errorf("staged = %q, want empty", got)
	}
}

func TestAppendBeyondTheFileFails(t *testing.T) {
	d := newDir(t)
	if _, err := d.Append("fresh", 5, raws(`1`)); err == nil {
		t.Error("Append at offset 5 of a batch with nothing staged: want an error")
	}
	n := mustAppend(t, d, "b-1", 0, `{"a":1}`)
	if _, err := d.Append("b-1", n+1, raws(`{"b":2}`)); err == nil {
		t.Error("Append one byte beyond the staged length: want an error")
	}
	if got := readFile(t, stagedPath(d, "b-1")); got != "{\"a\":1}\n" {
		t.Errorf("a refused Append changed the file: %q", got)
	}
}

// manifestOf reads manifest.json as a generic map, so that the JSON names
// are checked, not only the Go fields.
func manifestOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, export.ManifestFile))), &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestPublish(t *testing.T) {
	d := newDir(t)
	lines := []string{`{"cpf":"00000000191","found":true}`, `{"cpf":"12345678909","found":false}`, `{"cpf":"98765432100","nome":"Zoë"}`}
	n1 := mustAppend(t, d, "b-1", 0, lines[0], lines[1])
	n2 := mustAppend(t, d, "b-1", n1, lines[2])
	b := batch("b-1", 3, 2, n2)
	b.Notification.Flags = []string{"completed_at is not UTC"}
	exportedAt := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)

	final, _, err := d.Publish(b, exportedAt)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if final != d.Path("b-1") || final != filepath.Join(d.Root(), "b-1") {
		t.Errorf("Publish = %q, want %q", final, filepath.Join(d.Root(), "b-1"))
	}
	wantResults := strings.Join(lines, "\n") + "\n"
	results := readFile(t, filepath.Join(final, export.ResultsFile))
	if results != wantResults {
		t.Errorf("results = %q, want %q", results, wantResults)
	}
	notExist(t, filepath.Join(d.Root(), ".partial", "b-1"))
	if p := perm(t, final); p != 0o700 {
		t.Errorf("export dir mode %o, want 700", p)
	}
	for _, f := range []string{export.ResultsFile, export.ManifestFile} {
		if p := perm(t, filepath.Join(final, f)); p != 0o600 {
			t.Errorf("%s mode %o, want 600", f, p)
		}
	}
	entries, err := os.ReadDir(final)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("export dir holds %d entries, want results and manifest only", len(entries))
	}

	m := manifestOf(t, final)
	want := map[string]any{
		"batch_id":        "b-1",
		"status":          "partial",
		"total_requested": 5.0,
		"total_found":     3.0,
		"total_not_found": 2.0,
		"items":           3.0,
		"pages":           2.0,
		"sha256":          sha256Hex(wantResults),
		"source":          "webhook",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("manifest %s = %#v, want %#v", k, m[k], v)
		}
	}
	if m["sha256"] != sha256Hex(results) {
		t.Errorf("manifest sha256 %v does not match the file", m["sha256"])
	}
	for k, v := range map[string]time.Time{
		"completed_at": time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		"received_at":  time.Date(2026, 11, 22, 10, 0, 3, 500_000_000, time.UTC),
		"exported_at":  exportedAt,
	} {
		s, _ := m[k].(string)
		got, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !got.Equal(v) {
			t.Errorf("manifest %s = %#v, want %v", k, m[k], v)
		}
	}
	if flags, _ := m["flags"].([]any); len(flags) != 1 || flags[0] != "completed_at is not UTC" {
		t.Errorf("manifest flags = %#v", m["flags"])
	}

	if dir, _, _, ok, err := d.Published("b-1"); err != nil || !ok || dir != final {
		t.Errorf("Published = %q, %v, %v; want %q, true, nil", dir, ok, err, final)
	}
	if ok, err := export.Verify(final); err != nil || !ok {
		t.Errorf("Verify = %v, %v", ok, err)
	}
}

func TestPublishUnknownValuesAreNull(t *testing.T) {
	d := newDir(t)
	n := mustAppend(t, d, "polled", 0, `{"a":1}`)
	b := batch("polled", 1, 1, n)
	b.Notification.TotalRequested, b.Notification.TotalFound, b.Notification.TotalNotFound = nil, nil, nil
	b.Notification.CompletedAt = nil
	b.Notification.Source = store.SourcePoll
	final, _, err := d.Publish(b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, final)
	for _, k := range []string{"total_requested", "total_found", "total_not_found", "completed_at"} {
		v, present := m[k]
		if !present || v != nil {
			t.Errorf("manifest %s = %#v (present %v), want null", k, v, present)
		}
	}
	if m["source"] != "poll" {
		t.Errorf("source = %v", m["source"])
	}
	if _, present := m["flags"]; present {
		t.Errorf("flags present without flags: %v", m["flags"])
	}
}

func TestPublishZeroItems(t *testing.T) {
	d := newDir(t)
	final, _, err := d.Publish(batch("empty", 0, 1, 0), time.Now())
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	st, err := os.Stat(filepath.Join(final, export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Errorf("results size %d, want 0", st.Size())
	}
	m := manifestOf(t, final)
	if m["items"] != 0.0 || m["sha256"] != sha256Hex("") {
		t.Errorf("manifest items %v sha256 %v; want 0, %s", m["items"], m["sha256"], sha256Hex(""))
	}
	if _, _, _, ok, err := d.Published("empty"); !ok || err != nil {
		t.Errorf("Published = %v, %v", ok, err)
	}
	notExist(t, filepath.Join(d.Root(), ".partial", "empty"))
}

func TestPublishCutsToTheCheckpoint(t *testing.T) {
	d := newDir(t)
	n1 := mustAppend(t, d, "b-1", 0, `{"i":1}`, `{"i":2}`)
	mustAppend(t, d, "b-1", n1, `{"i":3}`) // written, never checkpointed
	final, _, err := d.Publish(batch("b-1", 2, 1, n1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(final, export.ResultsFile)); got != "{\"i\":1}\n{\"i\":2}\n" {
		t.Errorf("results = %q", got)
	}
}

func TestPublishKeepsAnExistingCompleteExport(t *testing.T) {
	d := newDir(t)
	n := mustAppend(t, d, "b-1", 0, `{"first":1}`)
	final, _, err := d.Publish(batch("b-1", 1, 1, n), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	manifest := readFile(t, filepath.Join(final, export.ManifestFile))

	// A second fetch of the same batch stages different bytes.
	n = mustAppend(t, d, "b-1", 0, `{"second":1}`, `{"second":2}`)
	again, _, err := d.Publish(batch("b-1", 2, 1, n), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	if again != final {
		t.Errorf("second Publish = %q, want %q", again, final)
	}
	if got := readFile(t, filepath.Join(final, export.ResultsFile)); got != "{\"first\":1}\n" {
		t.Errorf("results replaced: %q", got)
	}
	if got := readFile(t, filepath.Join(final, export.ManifestFile)); got != manifest {
		t.Errorf("manifest replaced:\n%s", got)
	}
	notExist(t, filepath.Join(d.Root(), ".partial", "b-1"))
}

func TestPublishConflict(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, final string)
	}{
		{"directory without manifest", func(t *testing.T, final string) {
			if err := os.MkdirAll(final, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(final, "mine.txt"), []byte("operator data"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"manifest that does not match", func(t *testing.T, final string) {
			if err := os.MkdirAll(final, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(final, export.ResultsFile), []byte("{\"x\":1}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			m := `{"batch_id":"b-1","items":1,"sha256":"` + sha256Hex("something else\n") + `"}`
			if err := os.WriteFile(filepath.Join(final, export.ManifestFile), []byte(m), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a regular file", func(t *testing.T, final string) {
			if err := os.WriteFile(final, []byte("not a dir"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDir(t)
			final := d.Path("b-1")
			tt.prepare(t, final)
			before := snapshot(t, final)
			n := mustAppend(t, d, "b-1", 0, `{"new":1}`)
			_, _, err := d.Publish(batch("b-1", 1, 1, n), time.Now())
			if !errors.Is(err, export.ErrConflict) {
				t.Fatalf("Publish error = %v, want ErrConflict", err)
			}
			if after := snapshot(t, final); after != before {
				t.Errorf("the existing path changed:\nbefore %s\nafter  %s", before, after)
			}
			// The staged results are not lost.
			if got := readFile(t, stagedPath(d, "b-1")); got != "{\"new\":1}\n" {
				t.Errorf("staged = %q", got)
			}
		})
	}
}

// snapshot describes a file or a directory tree's names and contents.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sb.WriteString(p + "|")
		if !e.IsDir() {
			sb.WriteString(readFile(t, p))
		}
		sb.WriteString(";")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func TestPublishItemCountMismatch(t *testing.T) {
	d := newDir(t)
	n := mustAppend(t, d, "b-1", 0, `{"a":1}`, `{"a":2}`)
	for _, items := range []int64{1, 3} {
		_, _, err := d.Publish(batch("b-1", items, 1, n), time.Now())
		if err == nil {
			t.Errorf("Publish with checkpoint items %d over 2 staged: want an error", items)
		}
		if errors.Is(err, export.ErrConflict) {
			t.Errorf("item mismatch reported as ErrConflict: %v", err)
		}
		notExist(t, d.Path("b-1"))
	}
}

func TestPublishStagedBytesBeyondTheFile(t *testing.T) {
	d := newDir(t)
	n := mustAppend(t, d, "b-1", 0, `{"a":1}`)
	if _, _, err := d.Publish(batch("b-1", 1, 1, n+10), time.Now()); err == nil {
		t.Error("Publish with StagedBytes beyond the staged file: want an error")
	}
	notExist(t, d.Path("b-1"))
}

func TestPublishedAndVerify(t *testing.T) {
	publish := func(t *testing.T) (*export.Dir, string) {
		d := newDir(t)
		n := mustAppend(t, d, "b-1", 0, `{"a":1}`, `{"a":2}`)
		final, _, err := d.Publish(batch("b-1", 2, 1, n), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return d, final
	}
	write := func(t *testing.T, path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		tamper     func(t *testing.T, final string)
		want       bool
		verifyErrs bool // Verify returns an error (Published does not)
	}{
		{"intact", func(*testing.T, string) {}, true, false},
		{"results changed, same line count", func(t *testing.T, final string) {
			write(t, filepath.Join(final, export.ResultsFile), "{\"a\":1}\n{\"a\":3}\n")
		}, false, false},
		{"results truncated", func(t *testing.T, final string) {
			write(t, filepath.Join(final, export.ResultsFile), "{\"a\":1}\n")
		}, false, false},
		{"results extended", func(t *testing.T, final string) {
			write(t, filepath.Join(final, export.ResultsFile), "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")
		}, false, false},
		{"results removed", func(t *testing.T, final string) {
			if err := os.Remove(filepath.Join(final, export.ResultsFile)); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		{"manifest not JSON", func(t *testing.T, final string) {
			write(t, filepath.Join(final, export.ManifestFile), "{not json")
		}, false, false},
		{"manifest item count wrong", func(t *testing.T, final string) {
			p := filepath.Join(final, export.ManifestFile)
			var m map[string]any
			if err := json.Unmarshal([]byte(readFile(t, p)), &m); err != nil {
				t.Fatal(err)
			}
			m["items"] = 3
			b, _ := json.Marshal(m)
			write(t, p, string(b))
		}, false, false},
		{"manifest removed", func(t *testing.T, final string) {
			if err := os.Remove(filepath.Join(final, export.ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"directory removed", func(t *testing.T, final string) {
			if err := os.RemoveAll(final); err != nil {
				t.Fatal(err)
			}
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, final := publish(t)
			tt.tamper(t, final)
			ok, err := export.Verify(final)
			if ok != tt.want {
				t.Errorf("Verify = %v, want %v", ok, tt.want)
			}
			if (err != nil) != tt.verifyErrs {
				t.Errorf("Verify error = %v, want error: %v", err, tt.verifyErrs)
			}
			dir, _, _, ok, err := d.Published("b-1")
			if err != nil {
				t.Errorf("Published error = %v", err)
			}
			if ok != tt.want {
				t.Errorf("Published = %v, want %v", ok, tt.want)
			}
			if ok && dir != final {
				t.Errorf("Published dir = %q, want %q", dir, final)
			}
		})
	}
	t.Run("never published", func(t *testing.T) {
		d := newDir(t)
		mustAppend(t, d, "staged-only", 0, `{"a":1}`)
		for _, id := range []string{"nothing", "staged-only"} {
			dir, _, _, ok, err := d.Published(id)
			if dir != "" || ok || err != nil {
				t.Errorf("Published(%s) = %q, %v, %v; want \"\", false, nil", id, dir, ok, err)
			}
		}
	})
}

func TestUnsafeBatchIDsNeverReachTheDisk(t *testing.T) {
	root := filepath.Join(t.TempDir(), "exports")
	d, err := export.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../escape", "", ".", "..", "a/b", ".hidden"} {
		if _, err := d.Append(id, 0, []json.RawMessage{json.RawMessage(`{}`)}); err == nil {
			t.Errorf("Append(%q) succeeded", id)
		}
		if _, err := d.Staged(id); err == nil {
			t.Errorf("Staged(%q) succeeded", id)
		}
		if _, _, _, _, err := d.Published(id); err == nil {
			t.Errorf("Published(%q) succeeded", id)
		}
		if _, _, err := d.Publish(store.Batch{ID: id}, time.Now()); err == nil {
			t.Errorf("Publish(%q) succeeded", id)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape")); err == nil {
		t.Fatal("a file was created outside the export root")
	}
}

func TestVerifyChecksTheManifestBatchID(t *testing.T) {
	root := filepath.Join(t.TempDir(), "exports")
	d, err := export.New(root)
	if err != nil {
		t.Fatal(err)
	}
	size, err := d.Append("b_one", 0, []json.RawMessage{json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	path, _, err := d.Publish(store.Batch{ID: "b_one", Checkpoint: store.Checkpoint{Done: true, Items: 1, Pages: 1, StagedBytes: size}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "b_two")
	if err := os.Rename(path, other); err != nil {
		t.Fatal(err)
	}
	if ok, _ := export.Verify(other); ok {
		t.Fatal("an export moved under another batch's name verifies")
	}
}
