package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/batchhook/batchhook/store"
)

// Staged returns the length of the staged results of batchID, 0 when none.
func (d *Dir) Staged(batchID string) (int64, error) {
	if err := checkID(batchID); err != nil {
		return 0, err
	}
	h, err := d.open()
	if err != nil {
		return 0, err
	}
	defer h.close()
	dir, _, err := openDirAt(h.partial, batchID, false)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	f, err := openFileAt(dir, ResultsFile, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open staged results: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
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
	h, err := d.open()
	if err != nil {
		return 0, err
	}
	defer h.close()
	dir, created, err := d.makeInPartial(h, batchID)
	if err != nil {
		return 0, fmt.Errorf("create staging dir: %w", err)
	}
	defer dir.Close()
	f, err := openFileAt(dir, ResultsFile, os.O_RDWR|os.O_CREATE)
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
		// The new file's entry must be durable before a checkpoint
		// counts on it; the directory's was made so by openDirAt.
		if err := syncDir(dir); err != nil {
			return 0, err
		}
	}
	return offset + int64(n), nil
}

// Discard removes whatever is staged for batchID: a batch that ends without
// publishing (abandoned, or kept at its previous export) must not leave its
// personal data in .partial. A link there is removed, never followed.
func (d *Dir) Discard(batchID string) error {
	if err := checkID(batchID); err != nil {
		return err
	}
	h, err := d.open()
	if err != nil {
		return err
	}
	defer h.close()
	if err := removeAt(h.partial, batchID); err != nil {
		return fmt.Errorf("remove staging: %w", err)
	}
	return d.syncPartial(h)
}

// Publish writes manifest.json beside the staged results, syncs it and the
// directory, and renames the staging directory to $EXPORT_DIR/<batch_id>;
// it returns the export's path and version. When a complete export is
// already there it keeps that one (one final directory per batch), drops
// the staging copy and syncs the root before saying so: a retry after a
// failed sync, or a restart after a crash, must not record as exported an
// export whose directory entry may not be on disk.
//
// The version of a first export is 0. A refetch (b.Refetch) replaces the
// export in place with the next version after both the store's
// (b.Version) and the one in place: an erasure may have rewritten the
// export since b was read, and under the batch's lock the manifest in
// place is the last word.
func (d *Dir) Publish(b store.Batch, exportedAt time.Time) (_ string, _ int, err error) {
	if err := checkID(b.ID); err != nil {
		return "", 0, err
	}
	defer d.locks.lock(b.ID)()
	h, err := d.open()
	if err != nil {
		return "", 0, err
	}
	defer h.close()
	final := d.Path(b.ID)
	inPlace, ok, err := verifyAt(h.root, b.ID, b.ID)
	if err == nil && ok && !b.Refetch {
		if err := d.syncRoot(h); err != nil {
			return "", 0, err
		}
		return final, inPlace.VersionOr(b.Version()), removeAt(h.partial, b.ID)
	}
	version := 0
	if b.Refetch {
		version = b.Version() + 1
		if inPlace.BatchID == b.ID && inPlace.VersionOr(-1) >= version {
			version = *inPlace.Version + 1
		}
	}
	// A batch with no items may never have appended: stage the empty file.
	if _, err := d.Append(b.ID, b.Checkpoint.StagedBytes, nil); err != nil {
		return "", 0, err
	}
	// Items whose CPF was erased are left out: the export is published
	// from a filtered copy (".erase.<id>"), the staging stays as it is
	// until the export is in place, so a crash in between redoes this.
	staged, erased, err := d.filterStaged(h, b)
	if err != nil {
		return "", 0, err
	}
	if err := d.writeManifest(h, staged, b, exportedAt, erased, version); err != nil {
		return "", 0, err
	}
	if staged != b.ID {
		defer func() {
			if err == nil {
				err = d.dropStaging(h, b.ID)
			}
		}()
	}
	st, exists, err := lstatAt(h.root, b.ID)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("check export dir: %w", err)
	case exists && isLink(st):
		return "", 0, fmt.Errorf("publish %s: %s is a symbolic link: %w", b.ID, final, ErrUnsafePath)
	case exists && !b.Refetch:
		return "", 0, fmt.Errorf("publish %s: %w", b.ID, ErrConflict)
	case exists:
		return final, version, d.replace(h, staged, b.ID)
	}
	if err := d.moveIn(h, staged, b.ID); err != nil {
		return "", 0, err
	}
	if err := d.syncPartial(h); err != nil {
		return "", 0, err
	}
	return final, version, nil
}

// moveIn renames staged (in .partial) to the root as batchID and syncs
// the root, with no sync of .partial in between (swapping): that sync
// would make the staging's removal durable before its new entry, and a
// cut would keep the export in neither place.
func (d *Dir) moveIn(h *handles, staged, batchID string) error {
	d.swapping.Lock()
	defer d.swapping.Unlock()
	if err := renameAt(h.partial, staged, h.root, batchID); err != nil {
		return fmt.Errorf("publish %s: %w", batchID, err)
	}
	if d.afterSwap != nil {
		d.afterSwap()
	}
	return d.syncRoot(h)
}

// writeManifest hashes the staged results, checks them against the
// checkpoint and writes and syncs manifest.json beside them.
func (d *Dir) writeManifest(h *handles, staged string, b store.Batch, exportedAt time.Time, erased int64, version int) error {
	dir, _, err := openDirAt(h.partial, staged, false)
	if err != nil {
		return fmt.Errorf("open staging dir: %w", err)
	}
	defer dir.Close()
	rf, err := openFileAt(dir, ResultsFile, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("open staged results: %w", err)
	}
	sum, lines, err := hashFile(rf)
	rf.Close()
	if err != nil {
		return err
	}
	if lines+erased != b.Checkpoint.Items {
		return fmt.Errorf("staged results hold %d items (%d erased), checkpoint says %d", lines, erased, b.Checkpoint.Items)
	}
	n := b.Notification
	m := Manifest{
		BatchID: b.ID, Version: &version, Status: n.Status, TotalRequested: n.TotalRequested, TotalFound: n.TotalFound,
		TotalNotFound: n.TotalNotFound, CompletedAt: n.CompletedAt, ReceivedAt: n.ReceivedAt,
		ExportedAt: exportedAt, Items: lines, Pages: b.Checkpoint.Pages, SHA256: sum, Source: n.Source,
		Flags: n.Flags, ErasedItems: erased,
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if err := writeFileSync(dir, ManifestFile, append(data, '\n')); err != nil {
		return err
	}
	return syncDir(dir)
}

// writeFileSync writes data as name inside dir and syncs it. It truncates
// only after openFileAt has checked the file (O_TRUNC would cut a planted
// hard link's other name before the check).
func writeFileSync(dir *os.File, name string, data []byte) error {
	f, err := openFileAt(dir, name, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return fmt.Errorf("truncate %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return f.Close()
}

func syncDir(d *os.File) error {
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", d.Name(), err)
	}
	return nil
}
