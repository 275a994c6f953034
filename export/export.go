// Package export is the export directory, where a batch's results land
// before any sink delivers them: as the fetcher's Stager it stages them
// under $EXPORT_DIR/.partial/<batch_id>/ and publishes them with one atomic
// rename to $EXPORT_DIR/<batch_id>/, so a downstream reader that sees the
// directory sees a complete export. The layout is a contract with downstream systems
// (docs/export-contract.md).
//
// The results are personal data: directories are 0700, files 0600, and
// nothing here logs an item.
package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/batchhook/batchhook/internal/safefs"
	"github.com/batchhook/batchhook/store"
)

// File names inside an export directory.
const (
	ResultsFile  = "results.ndjson"
	ManifestFile = "manifest.json"
	partialDir   = ".partial"
)

// ErrConflict is returned by Publish when a directory for the batch already
// exists and is not a complete export (its manifest does not match its
// results): batchhook never overwrites it silently.
var ErrConflict = errors.New("export directory exists and is not a complete export")

// Manifest describes one export. Counters and completed_at are null when the
// notification did not carry them (or, for a polled batch, cannot know them).
type Manifest struct {
	BatchID string `json:"batch_id"`
	// Version counts the changes of the export's content: 0 for the
	// batch's first export, and each refetch that replaces it or erasure
	// that rewrites it makes the next one. Sinks put it in their message
	// ids, so a receiver that deduplicates on ids takes each version as
	// new. Nil only in a manifest written before versions were recorded
	// (VersionOr).
	Version        *int       `json:"version"`
	Status         string     `json:"status"`
	TotalRequested *int64     `json:"total_requested"`
	TotalFound     *int64     `json:"total_found"`
	TotalNotFound  *int64     `json:"total_not_found"`
	CompletedAt    *time.Time `json:"completed_at"`
	ReceivedAt     time.Time  `json:"received_at"`
	ExportedAt     time.Time  `json:"exported_at"`
	Items          int64      `json:"items"`
	Pages          int64      `json:"pages"`
	SHA256         string     `json:"sha256"`
	Source         string     `json:"source"`
	Flags          []string   `json:"flags,omitempty"`
	// ErasedItems counts the items removed from this export because their
	// CPF was erased (LGPD art. 18): at publish, or by a later rewrite;
	// cumulative across rewrites.
	ErasedItems int64 `json:"erased_items"`
}

// VersionOr returns the manifest's version, or legacy for a manifest
// written before versions were recorded (the store's version of the batch
// then stands for it).
func (m Manifest) VersionOr(legacy int) int {
	if m.Version == nil {
		return legacy
	}
	return *m.Version
}

// Dir is the export directory rooted at one path: the fetcher stages and
// publishes into it (fetcher.Stager), the sinks read its published exports.
type Dir struct {
	root string
	// exchange swaps two directories atomically; tests replace it to play
	// a file system without RENAME_EXCHANGE.
	exchange func(aDir *os.File, a string, bDir *os.File, b string) error
	// locks serialises Publish, Erase and Remove of one batch.
	locks batchLocks
	// erasures, when set (SetErasures), filters erased CPFs at Publish.
	erasures erasureFilter
	// readers are the sinks' open snapshots (Open), told of every change.
	readers readers
	// rootSync syncs the export root; tests replace it to fail it.
	rootSync func(root *os.File) error
	// afterSwap, when set, runs right after an export's move between
	// .partial and the root, before the root's sync: tests put another
	// batch's work there.
	afterSwap func()
	// swapping is held (write) from a move of an export between .partial
	// and the root until the root is synced, and by every sync of
	// .partial (read). A swap moves the new export into the root and the
	// old one into .partial: a sync of .partial in between would make the
	// old export's new name durable while the root's durable entry still
	// names it, so a power cut could keep it in .partial and no export in
	// the root. A first publish's move would be durable in neither.
	// Recover's moves go without it: it runs at start, before anything
	// else uses the Dir.
	swapping sync.RWMutex
}

// syncPartial syncs .partial, never inside a swap's window (swapping).
func (d *Dir) syncPartial(h *handles) error {
	d.swapping.RLock()
	defer d.swapping.RUnlock()
	return syncDir(h.partial)
}

// makeInPartial opens the directory name in .partial, creating it
// durably (which syncs .partial: never inside a swap's window).
func (d *Dir) makeInPartial(h *handles, name string) (*os.File, bool, error) {
	d.swapping.RLock()
	defer d.swapping.RUnlock()
	return openDirAt(h.partial, name, true)
}

// syncRoot makes the entries of the export root durable: a renamed or
// removed export directory is on disk only once it returns nil.
func (d *Dir) syncRoot(h *handles) error {
	if d.rootSync != nil {
		if err := d.rootSync(h.root); err != nil {
			return fmt.Errorf("sync dir %s: %w", h.root.Name(), err)
		}
		return nil
	}
	return syncDir(h.root)
}

// New returns the export directory rooted at root, creating root (0700)
// and .partial if needed, each durable (its parent fsynced) before New
// returns: an export published below a directory whose own entry a power
// cut can drop would be lost with it. The root itself is the operator's
// choice and may be a link; nothing under it is ever followed
// (ErrUnsafePath), .partial included.
func New(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("export dir %s: %w", root, err)
	}
	if err := safefs.MkdirAll(abs); err != nil {
		return nil, fmt.Errorf("create export dir: %w", err)
	}
	// An earlier run may have made it, .partial or payments/ without
	// syncing them into place: sync them now, before anything is
	// published in them.
	if err := safefs.Settle(abs); err != nil {
		return nil, fmt.Errorf("open export dir: %w", err)
	}
	d := &Dir{root: abs, exchange: exchange}
	h, err := d.open()
	if err != nil {
		return nil, fmt.Errorf("create export dir: %w", err)
	}
	h.close()
	return d, nil
}

// Root returns the absolute export root.
func (d *Dir) Root() string { return d.root }

// Path returns where the export of batchID is published.
func (d *Dir) Path(batchID string) string { return filepath.Join(d.root, batchID) }

// handles are the open root and staging directories of one operation: every
// name below them is resolved from these descriptors, never from a path.
type handles struct{ root, partial *os.File }

// open opens the root and .partial (creating .partial when missing).
func (d *Dir) open() (*handles, error) {
	root, err := os.Open(d.root)
	if err != nil {
		return nil, fmt.Errorf("open export root: %w", err)
	}
	partial, _, err := openDirAt(root, partialDir, true)
	if err != nil {
		root.Close()
		return nil, err
	}
	return &handles{root: root, partial: partial}, nil
}

func (h *handles) close() {
	h.partial.Close()
	h.root.Close()
}

// checkID refuses an id that is not a safe directory name, whoever the
// caller: the export must never reach outside its root.
func checkID(batchID string) error {
	if err := store.CheckBatchID(batchID); err != nil {
		return fmt.Errorf("batch id %q: %w", batchID, err)
	}
	return nil
}

// Published reports whether a complete export of batchID is in place: a
// manifest whose sha256 matches the results file next to it. It returns
// the export's path, exported_at and version (-1 for a manifest written
// before versions were recorded). Before it says so, it syncs the export
// root, so an export reported in place survives a power loss even when an
// earlier sync after its rename failed or a crash came before it. A link
// in its place is an error (ErrUnsafePath), not an export.
func (d *Dir) Published(batchID string) (string, time.Time, int, bool, error) {
	if err := checkID(batchID); err != nil {
		return "", time.Time{}, 0, false, err
	}
	h, err := d.open()
	if err != nil {
		return "", time.Time{}, 0, false, err
	}
	defer h.close()
	m, ok, err := verifyAt(h.root, batchID, batchID)
	if errors.Is(err, os.ErrNotExist) {
		return "", time.Time{}, 0, false, nil
	}
	if err != nil || !ok {
		return "", time.Time{}, 0, false, err
	}
	if err := d.syncRoot(h); err != nil {
		return "", time.Time{}, 0, false, fmt.Errorf("make the export of %s durable: %w", batchID, err)
	}
	return d.Path(batchID), m.ExportedAt, m.VersionOr(-1), true, nil
}

// Verify reports whether dir holds a complete export: its manifest parses,
// names the directory's batch, and its sha256 and item count match
// results.ndjson. dir must not be a link.
func Verify(dir string) (bool, error) {
	parent, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return false, err
	}
	defer parent.Close()
	name := filepath.Base(dir)
	_, ok, err := verifyAt(parent, name, name)
	return ok, err
}

// maxManifestBytes bounds what a manifest read may allocate.
const maxManifestBytes = 1 << 20

// verifyAt checks the export directory name inside parent, whose manifest
// must name batch id. A missing directory or manifest is an error matching
// os.ErrNotExist; a file in the directory's place is not an export
// (ok=false, nil); a link is ErrUnsafePath.
func verifyAt(parent *os.File, name, id string) (Manifest, bool, error) {
	m, _, ok, err := readAt(parent, name, id)
	return m, ok, err
}

// readAt is verifyAt that also returns the manifest's bytes as published.
func readAt(parent *os.File, name, id string) (Manifest, []byte, bool, error) {
	m, data, rf, ok, err := readOpen(parent, name, id)
	if rf != nil {
		rf.Close()
	}
	return m, data, ok, err
}

// readOpen is readAt that, when the export is complete, also returns its
// results file open at the start (rewound after the check), so that what
// was checked is what the caller reads; the caller closes it. The file is
// nil whenever ok is false.
func readOpen(parent *os.File, name, id string) (Manifest, []byte, *os.File, bool, error) {
	var m Manifest
	dir, _, err := openDirAt(parent, name, false)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		if st, ok, serr := lstatAt(parent, name); serr == nil && ok && !isLink(st) {
			return m, nil, nil, false, nil // a file or another entry: not an export
		}
		return m, nil, nil, false, err
	}
	if err != nil {
		return m, nil, nil, false, err
	}
	defer dir.Close()
	mf, err := openReadAt(dir, ManifestFile)
	if err != nil {
		return m, nil, nil, false, err
	}
	data, err := io.ReadAll(io.LimitReader(mf, maxManifestBytes))
	mf.Close()
	if err != nil {
		return m, nil, nil, false, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil || m.BatchID != id {
		return m, nil, nil, false, nil
	}
	rf, err := openReadAt(dir, ResultsFile)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil, nil, false, nil
	}
	if err != nil {
		return m, nil, nil, false, err
	}
	sum, lines, err := hashFile(rf)
	if err == nil && (sum != m.SHA256 || lines != m.Items) {
		rf.Close()
		return m, data, nil, false, nil
	}
	if err == nil {
		_, err = rf.Seek(0, io.SeekStart)
	}
	if err != nil {
		rf.Close()
		return m, nil, nil, false, err
	}
	return m, data, rf, true, nil
}

func hashFile(f *os.File) (string, int64, error) {
	h := sha256.New()
	lc := &lineCounter{}
	if _, err := io.Copy(io.MultiWriter(h, lc), f); err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), lc.n, nil
}

type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.n++
		}
	}
	return len(p), nil
}

// OpenResults opens results.ndjson of the published export of batchID for
// reading, without following a link at any step (ErrUnsafePath), so that a
// planted link cannot make batchhook read, and act on, files outside the
// root.
func (d *Dir) OpenResults(batchID string) (io.ReadCloser, error) {
	if err := checkID(batchID); err != nil {
		return nil, err
	}
	h, err := d.open()
	if err != nil {
		return nil, err
	}
	defer h.close()
	dir, _, err := openDirAt(h.root, batchID, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return openReadAt(dir, ResultsFile)
}
