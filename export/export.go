// Package export is the default sink: it stages a batch's results under
// $EXPORT_DIR/.partial/<batch_id>/ and publishes them with one atomic rename
// to $EXPORT_DIR/<batch_id>/, so a downstream reader that sees the directory
// sees a complete export. The layout is a contract with downstream systems
// (README, "Export layout").
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
	"time"

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
	BatchID        string     `json:"batch_id"`
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
}

// Dir is a file sink rooted at an export directory.
type Dir struct {
	root string
}

// New returns a sink rooted at root, creating root (0700) if needed.
func New(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("export dir %s: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, partialDir), 0o700); err != nil {
		return nil, fmt.Errorf("create export dir: %w", err)
	}
	return &Dir{root: abs}, nil
}

// Root returns the absolute export root.
func (d *Dir) Root() string { return d.root }

// Path returns where the export of batchID is published.
func (d *Dir) Path(batchID string) string { return filepath.Join(d.root, batchID) }

func (d *Dir) partial(batchID string) string { return filepath.Join(d.root, partialDir, batchID) }

// checkID refuses an id that is not a safe directory name, whoever the
// caller: the export must never reach outside its root.
func checkID(batchID string) error {
	if err := store.CheckBatchID(batchID); err != nil {
		return fmt.Errorf("batch id %q: %w", batchID, err)
	}
	return nil
}

// Published reports whether a complete export of batchID is in place: a
// manifest whose sha256 matches the results file next to it.
func (d *Dir) Published(batchID string) (string, time.Time, bool, error) {
	if err := checkID(batchID); err != nil {
		return "", time.Time{}, false, err
	}
	dir := d.Path(batchID)
	m, ok, err := verify(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", time.Time{}, false, nil
	}
	if err != nil || !ok {
		return "", time.Time{}, false, err
	}
	return dir, m.ExportedAt, true, nil
}

// Verify reports whether dir holds a complete export: its manifest parses,
// names the directory's batch, and its sha256 and item count match
// results.ndjson.
func Verify(dir string) (bool, error) {
	_, ok, err := verify(dir)
	return ok, err
}

func verify(dir string) (Manifest, bool, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, false, err
	}
	if err := json.Unmarshal(data, &m); err != nil || m.BatchID != filepath.Base(dir) {
		return m, false, nil
	}
	sum, lines, err := hashFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return m, false, nil
		}
		return m, false, err
	}
	return m, sum == m.SHA256 && lines == m.Items, nil
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	lc := &lineCounter{}
	if _, err := io.Copy(io.MultiWriter(h, lc), f); err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
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

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", path, err)
	}
	return nil
}
