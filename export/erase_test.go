package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Items of one synthetic person (both forms of 529.982.247-25) among
// others; the erasure matches the normalized CPF.
var (
	itemA1   = `{"cpf":"529.982.247-25","name":"Ana"}`
	itemA2   = `{"cpf":"52998224725","name":"Ana"}`
	itemB    = `{"cpf":"11144477735","name":"Bia"}`
	itemNoCP = `{"name":"no cpf"}`
	itemNum  = `{"cpf":52998224725}`
)

func matchA(d string) bool { return d == "52998224725" }

// checkExport reads the published export of id the way a downstream reader
// would, and checks its manifest against an independent hash of the file.
func checkExport(t *testing.T, d *Dir, id string) (Manifest, []string) {
	t.Helper()
	dir := d.Path(id)
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("manifest: %v %s", err, raw)
	}
	sum := sha256.Sum256(data)
	if m.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("manifest sha256 %s does not match the file (%x)", m.SHA256, sum)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	if int64(len(lines)) != m.Items {
		t.Fatalf("manifest items %d, file has %d lines", m.Items, len(lines))
	}
	for _, name := range []string{dir, filepath.Join(dir, ResultsFile), filepath.Join(dir, ManifestFile)} {
		st, _ := os.Stat(name)
		if want := os.FileMode(fileMode); st.IsDir() {
			want = dirMode
			if st.Mode().Perm() != want {
				t.Fatalf("%s mode %o", name, st.Mode().Perm())
			}
		} else if st.Mode().Perm() != want {
			t.Fatalf("%s mode %o", name, st.Mode().Perm())
		}
	}
	return m, lines
}

func TestEraseRewritesThePublishedExport(t *testing.T) {
	for _, withExchange := range []bool{true, false} {
		d := newTestDir(t)
		if !withExchange {
			d.exchange = noExchange
		}
		publish(t, d, "b-1", false, itemA1, itemB, itemNoCP, itemA2, itemNum)
		before, _ := checkExport(t, d, "b-1")
		n, v, in, err := d.Erase("b-1", 0, "cpf", matchA, nil)
		if err != nil || n != 2 || v != 1 || !in {
			t.Fatalf("Erase = %d, version %d, in place %v, %v; want 2 items, version 1", n, v, in, err)
		}
		m, lines := checkExport(t, d, "b-1")
		if want := []string{itemB, itemNoCP, itemNum}; !slices.Equal(lines, want) {
			t.Fatalf("results = %q, want %q (a missing or non-string CPF member is left as is)", lines, want)
		}
		if m.ErasedItems != 2 || !m.ExportedAt.Equal(before.ExportedAt) || m.BatchID != "b-1" || m.VersionOr(-1) != 1 || before.VersionOr(-1) != 0 {
			t.Fatalf("manifest = %+v", m)
		}
		if got := partialNames(t, d); len(got) != 0 {
			t.Fatalf(".partial holds %v after the rewrite (a copy of the old export is personal data)", got)
		}
		// Idempotent: nothing left to remove changes nothing.
		stBefore, _ := os.Stat(filepath.Join(d.Path("b-1"), ResultsFile))
		if n, v, in, err := d.Erase("b-1", 0, "cpf", matchA, nil); err != nil || n != 0 || v != 1 || !in {
			t.Fatalf("second Erase = %d, version %d, in place %v, %v; want 0 items, version 1 in place", n, v, in, err)
		}
		stAfter, _ := os.Stat(filepath.Join(d.Path("b-1"), ResultsFile))
		if !os.SameFile(stBefore, stAfter) {
			t.Fatal("a second erase rewrote a clean export")
		}
		// Cumulative: another person erased later adds up.
		if n, _, _, err := d.Erase("b-1", 0, "cpf", func(s string) bool { return s == "11144477735" }, nil); err != nil || n != 1 {
			t.Fatalf("erase B = %d, %v", n, err)
		}
		if m, _ := checkExport(t, d, "b-1"); m.ErasedItems != 3 || m.Items != 2 || m.VersionOr(-1) != 2 {
			t.Fatalf("after erasing B: %+v", m)
		}
	}
}

func TestEraseWithoutAnExportTouchesNothing(t *testing.T) {
	d := newTestDir(t)
	if n, _, _, err := d.Erase("b-none", 0, "cpf", matchA, nil); n != 0 || err != nil {
		t.Fatalf("Erase of a missing export = %d, %v", n, err)
	}
	publish(t, d, "b-2", false, itemB)
	if err := os.WriteFile(filepath.Join(d.Path("b-2"), ResultsFile), []byte(itemA1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := d.Erase("b-2", 0, "cpf", matchA, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("Erase of an export not matching its manifest = %v, want ErrConflict", err)
	}
}

// crash is what an injected crash panics with.
type crash struct{}

// eraseUntilCrash runs Erase with exchange replaced by step, which panics
// (a crash at that point); it returns once the panic is caught.
func eraseUntilCrash(t *testing.T, d *Dir, step func(aDir *os.File, a string, bDir *os.File, b string) error) {
	t.Helper()
	d.exchange = step
	defer func() {
		if r := recover(); r != (crash{}) {
			t.Fatalf("recovered %v, want the injected crash", r)
		}
		d.exchange = exchange
	}()
	d.Erase("b-1", 0, "cpf", matchA, nil)
	t.Fatal("Erase returned: the crash was not injected")
}

func TestACrashMidRewriteLeavesTheOldExportOrTheNew(t *testing.T) {
	cases := []struct {
		name    string
		step    func(aDir *os.File, a string, bDir *os.File, b string) error
		wantNew bool
	}{
		{"rewrite written, not swapped", func(*os.File, string, *os.File, string) error { panic(crash{}) }, false},
		{"swapped, old not removed", func(aDir *os.File, a string, bDir *os.File, b string) error {
			if err := exchange(aDir, a, bDir, b); err != nil {
				t.Fatal(err)
			}
			panic(crash{})
		}, true},
		{"fallback: old moved aside, new not yet in place", func(aDir *os.File, a string, bDir *os.File, b string) error {
			if err := unix.Renameat(int(bDir.Fd()), b, int(aDir.Fd()), asideName(b)); err != nil {
				t.Fatal(err)
			}
			panic(crash{})
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDir(t)
			publish(t, d, "b-1", false, itemA1, itemB)
			eraseUntilCrash(t, d, c.step)
			// The next start: Recover, then the erasure is done again.
			r, err := d.Recover()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(r.Dropped, "b-1") {
				t.Fatalf("Recover = %+v; want the rewrite dropped", r)
			}
			m, lines := checkExport(t, d, "b-1")
			isNew := slices.Equal(lines, []string{itemB}) && m.ErasedItems == 1
			isOld := slices.Equal(lines, []string{itemA1, itemB}) && m.ErasedItems == 0
			if !isNew && !isOld || isNew != c.wantNew {
				t.Fatalf("after the crash: %q erased %d; want the %s export", lines, m.ErasedItems, map[bool]string{true: "new", false: "old"}[c.wantNew])
			}
			if got := partialNames(t, d); len(got) != 0 {
				t.Fatalf(".partial holds %v after Recover", got)
			}
			n, _, _, err := d.Erase("b-1", 0, "cpf", matchA, nil)
			if err != nil || n != map[bool]int64{true: 0, false: 1}[c.wantNew] {
				t.Fatalf("resumed Erase = %d, %v", n, err)
			}
			if _, lines := checkExport(t, d, "b-1"); !slices.Equal(lines, []string{itemB}) {
				t.Fatalf("after the resumed erasure: %q", lines)
			}
		})
	}
}

func TestPublishLeavesOutErasedItems(t *testing.T) {
	d := newTestDir(t)
	calls := 0
	d.SetErasures("cpf", func() (func(string) bool, error) { calls++; return matchA, nil })
	publish(t, d, "b-3", false, itemA1, itemB, itemA2)
	if calls != 1 {
		t.Fatalf("matcher loaded %d times at publish, want 1", calls)
	}
	m, lines := checkExport(t, d, "b-3")
	if !slices.Equal(lines, []string{itemB}) || m.ErasedItems != 2 || m.Items != 1 {
		t.Fatalf("published %q, manifest %+v", lines, m)
	}
	if got := partialNames(t, d); len(got) != 0 {
		t.Fatalf(".partial holds %v after publishing: the unfiltered staging must go", got)
	}
	// A refetch is filtered the same way and replaces the export.
	publish(t, d, "b-3", true, itemA2, itemB, itemB)
	if m, lines := checkExport(t, d, "b-3"); len(lines) != 2 || m.ErasedItems != 1 {
		t.Fatalf("refetch published %q, %+v", lines, m)
	}
	// Nothing erased ever: the matcher is nil and nothing is filtered.
	d2 := newTestDir(t)
	d2.SetErasures("cpf", func() (func(string) bool, error) { return nil, nil })
	publish(t, d2, "b-4", false, itemA1)
	if m, lines := checkExport(t, d2, "b-4"); len(lines) != 1 || m.ErasedItems != 0 {
		t.Fatalf("unfiltered publish: %q %+v", lines, m)
	}
}

// The race the batch lock closes: a publish that read the erasures before
// the erasure was recorded, and an erasure that looks at the export before
// that publish put it in place. The erasure must wait for the publish and
// then rewrite what it published.
func TestAnErasureWaitsForAPublishThatMissedIt(t *testing.T) {
	d := newTestDir(t)
	inPublish, release := make(chan struct{}), make(chan struct{})
	d.SetErasures("cpf", func() (func(string) bool, error) {
		close(inPublish)
		<-release
		return nil, nil // the publish saw no erasure yet
	})
	published := make(chan string, 1)
	go func() { published <- publish(t, d, "b-5", false, itemA1, itemB) }()
	<-inPublish
	erased := make(chan int64, 1)
	go func() {
		n, _, _, err := d.Erase("b-5", 0, "cpf", matchA, nil)
		if err != nil {
			t.Error(err)
		}
		erased <- n
	}()
	select {
	case n := <-erased:
		t.Fatalf("Erase returned %d while the publish of the same batch was under way", n)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-published
	if n := <-erased; n != 1 {
		t.Fatalf("Erase after the publish removed %d items, want 1", n)
	}
	if _, lines := checkExport(t, d, "b-5"); !slices.Equal(lines, []string{itemB}) {
		t.Fatalf("export = %q", lines)
	}
}

// A purge that comes while an erasure rewrites the same export must not
// let the erasure swap its rewrite back in afterwards: the purged batch
// would keep an export (personal data) nobody tracks.
func TestAPurgeWaitsForAnErasureUnderWay(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-6", false, itemA1, itemB)
	inSwap, release := make(chan struct{}), make(chan struct{})
	swap := d.exchange
	d.exchange = func(a *os.File, an string, b *os.File, bn string) error {
		close(inSwap)
		<-release
		return swap(a, an, b, bn)
	}
	erased := make(chan error, 1)
	go func() {
		_, _, _, err := d.Erase("b-6", 0, "cpf", matchA, nil)
		erased <- err
	}()
	<-inSwap
	purged := make(chan error, 1)
	go func() { purged <- d.Purge("b-6") }()
	select {
	case err := <-purged:
		t.Fatalf("Purge returned (%v) while an erasure of the same batch was swapping", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-erased; err != nil {
		t.Fatal(err)
	}
	if err := <-purged; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(d.Path("b-6")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("export of a purged batch still in place after the erasure finished: %v", err)
	}
}

// A rewrite left in .partial by an erasure that stopped before its swap
// (here a crash injected in the same process, standing for any error
// returned between writeFiltered and replace) holds the other items of the
// batch: a purge of the batch must delete it with the rest ("anything
// staged for it"); Recover only runs at the next start.
func TestAPurgeDeletesARewriteLeftByAnErasure(t *testing.T) {
	d := newTestDir(t)
	publish(t, d, "b-1", false, itemA1, itemB)
	eraseUntilCrash(t, d, func(*os.File, string, *os.File, string) error { panic(crash{}) })
	if got := partialNames(t, d); len(got) == 0 {
		t.Fatal("the stopped erasure left nothing in .partial: the test tests nothing")
	}
	if err := d.Purge("b-1"); err != nil {
		t.Fatal(err)
	}
	if got := partialNames(t, d); len(got) != 0 {
		t.Fatalf(".partial holds %v after the purge of b-1", got)
	}
}
