package export

import (
	"fmt"
)

// Remove deletes the published export of batchID and everything in it,
// without following a link at any step (a link in its place is removed
// itself, never its target), then syncs the root so the removal is
// durable. A missing export is not an error. The dispatcher calls it once
// every sink has delivered the batch and file is not a configured sink:
// personal data is not kept where nobody reads it.
func (d *Dir) Remove(batchID string) error {
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
		return fmt.Errorf("remove export %s: %w", batchID, err)
	}
	d.readers.changed(batchID)
	if err := d.syncRoot(h); err != nil {
		return fmt.Errorf("remove export %s: %w", batchID, err)
	}
	return nil
}
