package export

import (
	"errors"
	"fmt"
	"os"
)

// Manifest reads the manifest of the published export of batchID without
// checking it against the results (the purger only keeps its sha256 and
// item count in the batch's tombstone). ok is false when no manifest
// naming batchID is there.
func (d *Dir) Manifest(batchID string) (m Manifest, ok bool, err error) {
	if err := checkID(batchID); err != nil {
		return m, false, err
	}
	h, err := d.open()
	if err != nil {
		return m, false, err
	}
	defer h.close()
	m, _, _, err = readAt(h.root, batchID, batchID)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	return m, m.BatchID == batchID, nil
}

// Purge deletes everything the export root holds for batchID: the
// published directory, anything staged in .partial, a rewrite left by an
// erasure or a filtered publish that stopped before its swap, and an old
// copy left aside by an interrupted replace. Nothing is followed (a link is removed
// itself), a missing entry is not an error, and both directories are
// synced, so a purge that returned nil is durable and a repeated one does
// nothing. It holds the batch's lock, like Erase: an erasure that read the
// export before the purge must not swap its rewrite back in after it.
func (d *Dir) Purge(batchID string) error {
	if err := checkID(batchID); err != nil {
		return err
	}
	defer d.locks.lock(batchID)()
	h, err := d.open()
	if err != nil {
		return err
	}
	defer h.close()
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
	if err := syncDir(h.partial); err != nil {
		return fmt.Errorf("purge export %s: %w", batchID, err)
	}
	if err := d.syncRoot(h); err != nil {
		return fmt.Errorf("purge export %s: %w", batchID, err)
	}
	return nil
}
