package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// PurgeExport moves the exported batch id to purged with its tombstone and
// records that its export directory is to be deleted, in one transaction;
// the caller then deletes the files and calls FileRemovalDone (the
// removal has Purge set). It
// returns ErrDeliveryPending while a delivery of the export is pending
// (DECISIONS 23) and ErrState when the batch is no longer exported (a
// refetch came first). The returned batch's Tombstone.NeverDelivered names
// the sinks whose delivery ended failed.
func (s *Store) PurgeExport(id string, p ExportPurge, now time.Time) (*Batch, error) {
	var out *Batch
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := purgeExportTx(tx, id, p, now)
		out = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("purge export of %s: %w", id, err)
	}
	return out, nil
}

// ExportPurgeRequest is one export PurgeExports is to purge: the batch id
// and what the purger read from its export.
type ExportPurgeRequest struct {
	ID    string
	Purge ExportPurge
}

// ExportPurgeOutcome is what PurgeExports did with one request: Batch is
// the purged batch, or Err says why it was left as it was
// (ErrDeliveryPending, ErrState, ErrNotFound, wrapped).
type ExportPurgeOutcome struct {
	Batch *Batch
	Err   error
}

// PurgeExports is PurgeExport for several batches in one transaction: each
// batch purged gets its tombstone and its recorded file removal in the
// same commit, so that a purge pass pays one commit for many exports. The
// outcomes follow reqs. A batch refused on its own (a delivery pending, no
// longer exported, gone) is left untouched and does not stop the others;
// any other error rolls the whole transaction back and is returned. The
// caller deletes the purged batches' files only after it returns, then
// calls FileRemovalsDone.
func (s *Store) PurgeExports(reqs []ExportPurgeRequest, now time.Time) ([]ExportPurgeOutcome, error) {
	var out []ExportPurgeOutcome
	err := s.db.Update(func(tx *bolt.Tx) error {
		out = make([]ExportPurgeOutcome, len(reqs)) // Update may run this again
		for i, r := range reqs {
			b, err := purgeExportTx(tx, r.ID, r.Purge, now)
			switch {
			case errors.Is(err, ErrDeliveryPending), errors.Is(err, ErrState), errors.Is(err, ErrNotFound):
				// refused before anything was written for it
				out[i].Err = fmt.Errorf("purge export of %s: %w", r.ID, err)
			case err != nil:
				return fmt.Errorf("batch %s: %w", r.ID, err)
			default:
				out[i].Batch = b
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("purge %d exports: %w", len(reqs), err)
	}
	return out, nil
}

// purgeExportTx is one export's purge inside tx. ErrNotFound, ErrState and
// ErrDeliveryPending come back before anything is written.
func purgeExportTx(tx *bolt.Tx, id string, p ExportPurge, now time.Time) (*Batch, error) {
	b, err := getBatch(tx, id)
	if err != nil {
		return nil, err
	}
	if b.State != StateExported {
		return nil, fmt.Errorf("batch %s is %s: %w", id, b.State, ErrState)
	}
	var never []string
	if err := forDeliveries(tx, id, func(d *Delivery) error {
		switch d.State {
		case DeliveryPending:
			return fmt.Errorf("batch %s: delivery to %s: %w", id, d.Sink, ErrDeliveryPending)
		case DeliveryFailed:
			never = append(never, d.Sink)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := setState(tx, b, StatePurged); err != nil {
		return nil, err
	}
	t := tombstoneOf(b, now)
	// purged_at is when the batch became purged: this purge, not an
	// earlier one a refetch undid.
	t.PurgedAt, t.ExportPurgedAt, t.ExportedAt, t.ManifestSHA256, t.ManifestItems = now, now, p.ExportedAt, p.ManifestSHA256, p.ManifestItems
	slices.Sort(never)
	t.NeverDelivered = never
	b.ExportPath, b.UpdatedAt = "", now
	if err := recordFileRemoval(tx, id, true); err != nil {
		return nil, err
	}
	return b, putBatch(tx, b)
}

func forDeliveries(tx *bolt.Tx, batchID string, fn func(*Delivery) error) error {
	prefix := []byte(batchID + "\x00")
	c := tx.Bucket(bucketDeliveries).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var d Delivery
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("decode delivery %q: %w", k, err)
		}
		if err := fn(&d); err != nil {
			return err
		}
	}
	return nil
}
