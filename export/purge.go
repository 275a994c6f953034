package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Manifests reads the manifest of the published export of each batch of
// ids, with one opening of the export root for them all, without checking
// it against the results: the purger only keeps its sha256 and item count
// in the batch's tombstone, and an export under its final name was
// complete when it was renamed there. oks[i] is false when no manifest
// naming ids[i] is there. An id that is not a batch id is an error, like
// a manifest that cannot be read.
func (d *Dir) Manifests(ids []string) (ms []Manifest, oks []bool, err error) {
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, nil, err
		}
	}
	h, err := d.open()
	if err != nil {
		return nil, nil, err
	}
	defer h.close()
	ms, oks = make([]Manifest, len(ids)), make([]bool, len(ids))
	for i, id := range ids {
		if ms[i], oks[i], err = manifestAt(h.root, id); err != nil {
			return nil, nil, fmt.Errorf("manifest of %s: %w", id, err)
		}
	}
	return ms, oks, nil
}

// manifestAt reads parent/id/manifest.json, following no link; ok is
// false when there is none or it names another batch.
func manifestAt(parent *os.File, id string) (m Manifest, ok bool, err error) {
	dir, _, err := openDirAt(parent, id, false)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		if st, found, serr := lstatAt(parent, id); serr == nil && found && !isLink(st) {
			return m, false, nil // a file or another entry: not an export
		}
		return m, false, err
	}
	defer dir.Close()
	mf, err := openReadAt(dir, ManifestFile)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	data, err := io.ReadAll(io.LimitReader(mf, maxManifestBytes))
	mf.Close()
	if err != nil {
		return m, false, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil || m.BatchID != id {
		return Manifest{}, false, nil
	}
	return m, true, nil
}

// Purge deletes everything the export root holds for batchID: the
// published directory, anything staged in .partial, a rewrite left by an
// erasure or a filtered publish that stopped before its swap, and an old
// copy left aside by an interrupted replace. Nothing is followed (a link is
// removed itself), a missing entry is not an error, and both directories
// are synced, so a purge that returned nil is durable and a repeated one
// does nothing.
func (d *Dir) Purge(batchID string) error { return d.PurgeAll([]string{batchID})[0] }

// PurgeAll is Purge for every batch of ids with one sync of each directory
// for them all: the purger deletes a day's exports in groups, and a sync
// for each one was most of a pass's time. errs[i] is the error for ids[i],
// nil once its deletion is durable; when a directory cannot be synced, no
// deletion is, and every batch has that error. Each batch's entries are
// removed under its lock, like Erase's: an erasure that read the export
// before the purge must not swap its rewrite back in after it.
func (d *Dir) PurgeAll(ids []string) (errs []error) {
	errs = make([]error, len(ids))
	fail := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	h, err := d.open()
	if err != nil {
		return fail(err)
	}
	defer h.close()
	for i, id := range ids {
		errs[i] = d.purgeOne(h, id)
	}
	if err := d.syncPartial(h); err != nil {
		return fail(fmt.Errorf("purge exports: %w", err))
	}
	if err := d.syncRoot(h); err != nil {
		return fail(fmt.Errorf("purge exports: %w", err))
	}
	return errs
}

// purgeOne removes batchID's entries from both directories, unsynced.
func (d *Dir) purgeOne(h *handles, batchID string) error {
	if err := checkID(batchID); err != nil {
		return err
	}
	defer d.locks.lock(batchID)()
	if err := removeAt(h.root, batchID); err != nil {
		return fmt.Errorf("purge export %s: %w", batchID, err)
	}
	d.readers.changed(batchID)
	if err := removeAt(h.partial, batchID); err != nil {
		return fmt.Errorf("purge staging of %s: %w", batchID, err)
	}
	if err := removeAt(h.partial, rewriteName(batchID)); err != nil {
		return fmt.Errorf("purge erasure rewrite of %s: %w", batchID, err)
	}
	if err := removeAt(h.partial, asideName(batchID)); err != nil {
		return fmt.Errorf("purge old export of %s: %w", batchID, err)
	}
	if id, ok := asideOf(h, batchID+legacySuffix); ok && id == batchID {
		if err := removeAt(h.partial, batchID+legacySuffix); err != nil {
			return fmt.Errorf("purge old export of %s: %w", batchID, err)
		}
	}
	return nil
}
