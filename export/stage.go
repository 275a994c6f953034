package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/batchhook/batchhook/store"
)

// Staged returns the length of the staged results of batchID, 0 when none.
func (d *Dir) Staged(batchID string) (int64, error) {
	if err := checkID(batchID); err != nil {
		return 0, err
	}
	st, err := os.Stat(filepath.Join(d.partial(batchID), ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stat staged results: %w", err)
	}
	return st.Size(), nil
}

// Append writes items at offset, one a line, cutting anything staged beyond
// offset, and fsyncs before returning the new length: the caller
// checkpoints that length next. An offset beyond the staged length is an
// error (the fetcher checks Staged first and starts over).
func (d *Dir) Append(batchID string, offset int64, items []json.RawMessage) (int64, error) {
	if err := checkID(batchID); err != nil {
		return 0, err
	}
	dir := d.partial(batchID)
	created := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, fmt.Errorf("create staging dir: %w", err)
		}
		created = true
	}
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open staged results: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat staged results: %w", err)
	}
	if st.Size() < offset {
		return 0, fmt.Errorf("staged results have %d bytes, fewer than offset %d", st.Size(), offset)
	}
	if st.Size() > offset {
		if err := f.Truncate(offset); err != nil {
			return 0, fmt.Errorf("cut staged results to checkpoint: %w", err)
		}
	}
	n := 0
	for _, it := range items {
		n += len(it) + 1
	}
	buf := make([]byte, 0, n)
	for _, it := range items {
		buf = append(buf, it...)
		buf = append(buf, '\n')
	}
	if _, err := f.WriteAt(buf, offset); err != nil {
		return 0, fmt.Errorf("write staged results: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("sync staged results: %w", err)
	}
	if created || st.Size() == 0 {
		// The new file and directory entries must be durable before a
		// checkpoint counts on them.
		for _, p := range []string{dir, filepath.Dir(dir)} {
			if err := syncDir(p); err != nil {
				return 0, err
			}
		}
	}
	return offset + int64(n), nil
}

// Publish writes manifest.json beside the staged results, syncs it and the
// directory, and renames the staging directory to $EXPORT_DIR/<batch_id>.
// When a complete export is already there it keeps that one (one final
// directory per batch) and drops the staging copy.
func (d *Dir) Publish(b store.Batch, exportedAt time.Time) (string, error) {
	if err := checkID(b.ID); err != nil {
		return "", err
	}
	dir := d.partial(b.ID)
	final := d.Path(b.ID)
	if ok, err := Verify(final); err == nil && ok && !b.Refetch {
		return final, os.RemoveAll(dir)
	}
	// A batch with no items may never have appended: stage the empty file.
	if _, err := d.Append(b.ID, b.Checkpoint.StagedBytes, nil); err != nil {
		return "", err
	}
	results := filepath.Join(dir, ResultsFile)
	sum, lines, err := hashFile(results)
	if err != nil {
		return "", err
	}
	if lines != b.Checkpoint.Items {
		return "", fmt.Errorf("staged results hold %d items, checkpoint says %d", lines, b.Checkpoint.Items)
	}
	n := b.Notification
	m := Manifest{
		BatchID: b.ID, Status: n.Status, TotalRequested: n.TotalRequested, TotalFound: n.TotalFound,
		TotalNotFound: n.TotalNotFound, CompletedAt: n.CompletedAt, ReceivedAt: n.ReceivedAt,
		ExportedAt: exportedAt, Items: lines, Pages: b.Checkpoint.Pages, SHA256: sum, Source: n.Source,
		Flags: n.Flags,
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode manifest: %w", err)
	}
	if err := writeFileSync(filepath.Join(dir, ManifestFile), append(data, '\n')); err != nil {
		return "", err
	}
	if err := syncDir(dir); err != nil {
		return "", err
	}
	if _, err := os.Lstat(final); err == nil {
		if !b.Refetch {
			return "", fmt.Errorf("publish %s: %w", b.ID, ErrConflict)
		}
		return final, d.replace(dir, final)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("check export dir: %w", err)
	}
	if err := os.Rename(dir, final); err != nil {
		return "", fmt.Errorf("publish %s: %w", b.ID, err)
	}
	if err := syncDir(d.root); err != nil {
		return "", err
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return "", err
	}
	return final, nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// replace puts the staged directory in place of the published one. With
// renameat2(RENAME_EXCHANGE) the swap is atomic: a reader sees the old
// export or the new one, never neither. Where the file system does not
// support it, two renames leave a moment with no directory, but never a
// partial one. The old export ends up in staging and is removed.
func (d *Dir) replace(staged, final string) error {
	if err := exchange(staged, final); err != nil {
		old := staged + ".old"
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("move old export aside: %w", err)
		}
		if err := os.Rename(staged, final); err != nil {
			return fmt.Errorf("publish replacement: %w", err)
		}
		staged = old
	}
	if err := syncDir(d.root); err != nil {
		return err
	}
	if err := os.RemoveAll(staged); err != nil {
		return fmt.Errorf("remove replaced export: %w", err)
	}
	return syncDir(filepath.Dir(staged))
}
