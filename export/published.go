package export

import (
	"errors"
	"fmt"
	"os"
)

// Read returns the published export of batchID for a sink: its manifest
// exactly as published (raw) and parsed, after checking its sha256 and item
// count against results.ndjson. ok is false when no complete export is in
// place (missing, or not matching its manifest); a link in its place is
// ErrUnsafePath. The sink then reads the items through OpenResults.
func (d *Dir) Read(batchID string) (raw []byte, m Manifest, ok bool, err error) {
	if err := checkID(batchID); err != nil {
		return nil, m, false, err
	}
	h, err := d.open()
	if err != nil {
		return nil, m, false, err
	}
	defer h.close()
	m, raw, ok, err = readAt(h.root, batchID, batchID)
	if errors.Is(err, os.ErrNotExist) {
		return nil, m, false, nil
	}
	if err != nil || !ok {
		return nil, m, false, err
	}
	return raw, m, true, nil
}

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
