package export

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/store"
)

// Erasure of one person's items (LGPD art. 18). Both ways an erased CPF is
// kept out of exports write a filtered copy in .partial/.erase.<id>/ and
// swap it in whole:
//   - Erase rewrites a published export (the erasure service calls it for
//     every batch after recording the erasure);
//   - Publish filters the staged results of a batch against every erasure
//     recorded so far (SetErasures), so an export published after an
//     erasure was recorded never holds its CPF, whatever was staged before.
//
// Both hold the batch's lock, as does Remove: an erasure that reads the
// matcher too early for a publish still finds its export afterwards. A crash
// leaves the old export or the new one in place; Recover drops a
// .erase.<id> left behind, and the erasure (recorded first, resumed at
// start) or the publish (the batch is still fetching) does it again.
const rewritePrefix = ".erase."

func rewriteName(batchID string) string { return rewritePrefix + batchID }

// Matcher reports whether a normalized CPF (11 digits) was erased.
type Matcher func(digits string) bool

// erasureFilter is what SetErasures configures.
type erasureFilter struct {
	field string
	load  func() (func(digits string) bool, error)
}

// SetErasures makes Publish leave out every item whose member field (a
// string, BATCHHOOK_ITEM_CPF_FIELD) holds a CPF for which the function load
// returns true; load (store.ErasureMatcher) is called at each publish and
// may return nil when nothing was ever erased. Call it before the fetcher
// starts.
func (d *Dir) SetErasures(field string, load func() (func(digits string) bool, error)) {
	d.erasures = erasureFilter{field: field, load: load}
}

// batchLocks is one mutex per batch id, made on demand and dropped when
// nobody holds or waits for it.
type batchLocks struct {
	mu sync.Mutex
	m  map[string]*batchLock
}

type batchLock struct {
	sync.Mutex
	users int
}

// lock takes the lock of id and returns its release.
func (l *batchLocks) lock(id string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*batchLock{}
	}
	bl := l.m[id]
	if bl == nil {
		bl = &batchLock{}
		l.m[id] = bl
	}
	bl.users++
	l.mu.Unlock()
	bl.Lock()
	return func() {
		bl.Unlock()
		l.mu.Lock()
		if bl.users--; bl.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// itemCPF returns the normalized CPF in member field of an item, or false
// when the member is missing, not a string or not a valid CPF (such an
// item is left as it is).
func itemCPF(item []byte, field string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m[field], &s) != nil {
		return "", false
	}
	d, err := cpf.Normalize(s)
	return d, err == nil
}

// copyWithout writes the lines of src whose CPF does not match to dst and
// returns how many it left out and kept, and the SHA-256 of what it wrote.
// dst nil only counts.
func copyWithout(src io.Reader, dst io.Writer, field string, match Matcher) (erased, kept int64, sum string, err error) {
	h := sha256.New()
	var out io.Writer = h
	if dst != nil {
		out = io.MultiWriter(h, dst)
	}
	r := bufio.NewReaderSize(src, 64<<10)
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 {
			if d, ok := itemCPF(line, field); ok && match(d) {
				erased++
			} else {
				kept++
				if _, err := out.Write(line); err != nil {
					return 0, 0, "", fmt.Errorf("write filtered results: %w", err)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return erased, kept, hex.EncodeToString(h.Sum(nil)), nil
		}
		if rerr != nil {
			return 0, 0, "", fmt.Errorf("read results: %w", rerr)
		}
	}
}

// countErased reads the results file name in dir and counts the items
// that match.
func countErased(dir *os.File, name, field string, match Matcher) (int64, error) {
	f, err := openReadAt(dir, name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, _, _, err := copyWithout(f, nil, field, match)
	return n, err
}

// writeFiltered makes .partial/.erase.<id>/ holding results.ndjson from
// srcDir without the matching items, synced; it returns the counts and
// the new file's SHA-256. The caller writes the manifest beside it.
func (d *Dir) writeFiltered(h *handles, batchID string, srcDir *os.File, field string, match Matcher) (*os.File, int64, int64, string, error) {
	name := rewriteName(batchID)
	if err := removeAt(h.partial, name); err != nil {
		return nil, 0, 0, "", fmt.Errorf("clear an earlier rewrite: %w", err)
	}
	dir, _, err := d.makeInPartial(h, name)
	if err != nil {
		return nil, 0, 0, "", fmt.Errorf("create rewrite dir: %w", err)
	}
	src, err := openReadAt(srcDir, ResultsFile)
	if err != nil {
		dir.Close()
		return nil, 0, 0, "", fmt.Errorf("open results: %w", err)
	}
	defer src.Close()
	dst, err := openFileAt(dir, ResultsFile, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		dir.Close()
		return nil, 0, 0, "", fmt.Errorf("create filtered results: %w", err)
	}
	bw := bufio.NewWriterSize(dst, 64<<10)
	erased, kept, sum, err := copyWithout(src, bw, field, match)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.Close()
		return nil, 0, 0, "", fmt.Errorf("write filtered results: %w", err)
	}
	return dir, erased, kept, sum, nil
}

// filterStaged returns the .partial name to publish b from: b.ID itself,
// or a filtered copy when erased items were staged, with their count.
func (d *Dir) filterStaged(h *handles, b store.Batch) (string, int64, error) {
	if d.erasures.load == nil {
		return b.ID, 0, nil
	}
	match, err := d.erasures.load()
	if err != nil {
		return "", 0, fmt.Errorf("read erasures: %w", err)
	}
	if match == nil {
		return b.ID, 0, nil
	}
	src, _, err := openDirAt(h.partial, b.ID, false)
	if err != nil {
		return "", 0, fmt.Errorf("open staging dir: %w", err)
	}
	defer src.Close()
	n, err := countErased(src, ResultsFile, d.erasures.field, match)
	if err != nil || n == 0 {
		return b.ID, 0, err
	}
	dir, erased, _, _, err := d.writeFiltered(h, b.ID, src, d.erasures.field, match)
	if err != nil {
		return "", 0, err
	}
	dir.Close()
	return rewriteName(b.ID), erased, nil
}

// dropStaging removes the staging of batchID once its filtered copy is
// published.
func (d *Dir) dropStaging(h *handles, batchID string) error {
	if err := removeAt(h.partial, batchID); err != nil {
		return fmt.Errorf("remove staging: %w", err)
	}
	return d.syncPartial(h)
}

// Erase removes from the published export of batchID every item whose
// member field holds a CPF for which match is true. The export is
// rewritten beside it as the next version (after both base, the store's
// version of the batch, and the manifest's: items, sha256 and erased_items
// updated) and swapped in whole (replace), so a reader sees the old export
// or the new one; a sink reading the old one is stopped before Erase
// returns. It returns how many items it removed and, when a complete
// export is in place (inPlace), its version: the new one after a rewrite.
//
// Whenever a complete export is in place, settle (when not nil) is called
// with the items removed and the version, while Erase still holds the
// batch's lock: no sink can open the new version before settle has
// recorded it (the erasure notes which sinks had the old version and
// moves the others to the new one). Its error is returned as it is.
//
// No export, or nothing to remove, changes nothing (an erasure done again
// is harmless). When the version in place is newer than base (a rewrite
// whose swap a crash or a failed sync cut short of being recorded), the
// root is synced and any copy of the old export left in .partial removed
// before settle hears of it. An export in place that does not match its
// manifest is left alone and reported (ErrConflict); a link in its place
// is ErrUnsafePath.
func (d *Dir) Erase(batchID string, base int, field string, match func(digits string) bool,
	settle func(items int64, version int) error) (erased int64, version int, inPlace bool, err error) {
	if err := checkID(batchID); err != nil {
		return 0, 0, false, err
	}
	defer d.locks.lock(batchID)()
	h, err := d.open()
	if err != nil {
		return 0, 0, false, err
	}
	defer h.close()
	m, _, ok, err := readAt(h.root, batchID, batchID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, err)
	case !ok:
		return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, ErrConflict)
	}
	src, _, err := openDirAt(h.root, batchID, false)
	if err != nil {
		return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, err)
	}
	defer src.Close()
	current := m.VersionOr(base)
	n, err := countErased(src, ResultsFile, field, match)
	if err != nil {
		return 0, 0, false, err
	}
	if n == 0 {
		if current > base {
			if err := d.settleUnrecorded(h, batchID); err != nil {
				return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, err)
			}
		}
		if settle != nil {
			if err := settle(0, current); err != nil {
				return 0, 0, false, err
			}
		}
		return 0, current, true, nil
	}
	dir, erased, kept, sum, err := d.writeFiltered(h, batchID, src, field, match)
	if err != nil {
		return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, err)
	}
	defer dir.Close()
	version = max(current, base) + 1
	m.Version, m.Items, m.SHA256, m.ErasedItems = &version, kept, sum, m.ErasedItems+erased
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return 0, 0, false, fmt.Errorf("encode manifest: %w", err)
	}
	if err := writeFileSync(dir, ManifestFile, append(data, '\n')); err != nil {
		return 0, 0, false, fmt.Errorf("erase from export %s: %w", batchID, err)
	}
	if err := syncDir(dir); err != nil {
		return 0, 0, false, err
	}
	if err := d.syncPartial(h); err != nil {
		return 0, 0, false, err
	}
	if err := d.replace(h, rewriteName(batchID), batchID); err != nil {
		return 0, 0, false, fmt.Errorf("erase from export %s: swap in the rewrite: %w", batchID, err)
	}
	if settle != nil {
		if err := settle(erased, version); err != nil {
			return 0, 0, false, err
		}
	}
	return erased, version, true, nil
}

// settleUnrecorded finishes a rewrite of batchID that was swapped in but
// not recorded: the root is synced (the swap may never have been) and any
// copy of the old export the swap left in .partial is removed.
func (d *Dir) settleUnrecorded(h *handles, batchID string) error {
	if err := d.syncRoot(h); err != nil {
		return err
	}
	removed := false
	for _, name := range []string{rewriteName(batchID), asideName(batchID)} {
		if _, ok, err := lstatAt(h.partial, name); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		if err := removeAt(h.partial, name); err != nil {
			return fmt.Errorf("remove the old export left in staging: %w", err)
		}
		removed = true
	}
	if removed {
		return d.syncPartial(h)
	}
	return nil
}
