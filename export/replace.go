package export

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batchhook/batchhook/store"
)

// asidePrefix names the place in .partial where the two-rename fallback
// puts the old export of a batch while the new one moves in. A batch id
// cannot start with a dot, so ".old.<id>" never meets a batch's staging.
// Earlier versions used "<id>.old"; Recover still finds those.
const (
	asidePrefix  = ".old."
	legacySuffix = ".old"
)

func asideName(batchID string) string { return asidePrefix + batchID }

// replace puts the directory staged (in .partial: the batch's staging, or
// an erasure's rewrite) in place of the published export of batchID. With
// renameat2(RENAME_EXCHANGE) the swap is atomic: a reader sees the old
// export or the new one, never neither. Where the file system does not
// support it, two renames leave a moment with no directory, but never a
// partial one. The old export ends up in staging and is removed.
func (d *Dir) replace(h *handles, staged, batchID string) error {
	// The published export exists (the caller checked), so anything left
	// aside by an earlier replace is a stale copy of personal data: clear
	// it, or the fallback's first rename fails for every later refetch.
	if err := d.clearAside(h, batchID); err != nil {
		return err
	}
	old, err := d.swap(h, staged, batchID)
	if err != nil {
		return err
	}
	if err := removeAt(h.partial, old); err != nil {
		return fmt.Errorf("remove replaced export: %w", err)
	}
	return d.syncPartial(h)
}

// swap puts staged in place of the published export of batchID and syncs
// the root, with no sync of .partial in between (swapping); it returns
// the name in .partial the old export ended up under.
func (d *Dir) swap(h *handles, staged, batchID string) (string, error) {
	d.swapping.Lock()
	defer d.swapping.Unlock()
	old := staged
	if err := d.exchange(h.partial, staged, h.root, batchID); err != nil {
		old = asideName(batchID)
		if err := renameAt(h.root, batchID, h.partial, old); err != nil {
			return "", fmt.Errorf("move old export aside: %w", err)
		}
		if err := renameAt(h.partial, staged, h.root, batchID); err != nil {
			if rerr := renameAt(h.partial, old, h.root, batchID); rerr != nil {
				return "", errors.Join(fmt.Errorf("publish replacement: %w", err), fmt.Errorf("put old export back (Recover does at next start): %w", rerr))
			}
			return "", fmt.Errorf("publish replacement: %w", err)
		}
	}
	if d.afterSwap != nil {
		d.afterSwap()
	}
	// A sink still reading the old content stops before this returns.
	d.readers.changed(batchID)
	return old, d.syncRoot(h)
}

// clearAside removes what an earlier replace of batchID left aside, under
// the current name or the legacy one. Call it only while the published
// export of batchID exists: otherwise the aside copy is the only one.
func (d *Dir) clearAside(h *handles, batchID string) error {
	if err := removeAt(h.partial, asideName(batchID)); err != nil {
		return fmt.Errorf("clear old export left aside: %w", err)
	}
	legacy := batchID + legacySuffix
	if _, ok, _ := verifyAt(h.partial, legacy, batchID); ok {
		if err := removeAt(h.partial, legacy); err != nil {
			return fmt.Errorf("clear old export left aside: %w", err)
		}
	}
	return nil
}

// Recovery says what Recover found in .partial.
type Recovery struct {
	// Restored lists batches whose export was found only aside (a crash
	// came between the two renames of a replace) and was put back.
	Restored []string
	// Removed lists batches whose stale old export, left aside after its
	// replacement was published, was removed.
	Removed []string
	// Kept lists aside directories left alone: no export is published
	// for their batch and they are not a complete export either.
	Kept []string
	// Dropped lists batches whose rewrite without an erased CPF was cut
	// short and removed (".erase.<id>" in .partial).
	Dropped []string
}

// Recover sweeps .partial at start for old exports left aside by a
// replace that did not finish (RENAME_EXCHANGE unsupported, then a crash or
// an error). When the batch's export is published and complete, the aside
// copy is stale personal data and is removed; when none is published, the
// aside copy is the only complete export and is put back in place. Anything
// else (an incomplete export in place) is kept for an operator: an aside
// copy is never deleted unless a complete export stands in its place.
func (d *Dir) Recover() (Recovery, error) {
	var r Recovery
	h, err := d.open()
	if err != nil {
		return r, err
	}
	defer h.close()
	names, err := h.partial.Readdirnames(-1)
	if err != nil {
		return r, fmt.Errorf("list staging: %w", err)
	}
	slices.Sort(names)
	for _, name := range names {
		id, ok := asideOf(h, name)
		if !ok {
			continue
		}
		st, published, err := lstatAt(h.root, id)
		if err != nil {
			return r, err
		}
		live := false // the published export is complete: only then is the aside copy stale
		if published && !isLink(st) {
			_, live, _ = verifyAt(h.root, id, id)
		}
		switch _, complete, verr := verifyAt(h.partial, name, id); {
		case live:
			if err := removeAt(h.partial, name); err != nil {
				return r, fmt.Errorf("remove stale old export of %s: %w", id, err)
			}
			r.Removed = append(r.Removed, id)
		case !published && verr == nil && complete:
			if err := renameAt(h.partial, name, h.root, id); err != nil {
				return r, fmt.Errorf("restore the export of %s: %w", id, err)
			}
			r.Restored = append(r.Restored, id)
		default:
			r.Kept = append(r.Kept, name)
		}
	}
	// Rewrites cut short go last, once any old export is back in place:
	// each is a copy derived from the published export or the staging,
	// and its erasure (recorded first) or publish is done again.
	for _, name := range names {
		if id, ok := strings.CutPrefix(name, rewritePrefix); ok {
			if err := removeAt(h.partial, name); err != nil {
				return r, fmt.Errorf("remove unfinished rewrite of %s: %w", id, err)
			}
			r.Dropped = append(r.Dropped, id)
		}
	}
	if len(r.Restored)+len(r.Removed)+len(r.Dropped) > 0 {
		if err := d.syncRoot(h); err != nil {
			return r, err
		}
		if err := d.syncPartial(h); err != nil {
			return r, err
		}
	}
	return r, nil
}

// asideOf reports whether the .partial entry name is an old export left
// aside, and of which batch. A legacy "<id>.old" counts only when its
// manifest names <id>: otherwise it is the staging of a batch whose id ends
// in ".old".
func asideOf(h *handles, name string) (string, bool) {
	if id, ok := strings.CutPrefix(name, asidePrefix); ok {
		return id, store.CheckBatchID(id) == nil
	}
	id, ok := strings.CutSuffix(name, legacySuffix)
	if !ok || store.CheckBatchID(id) != nil {
		return "", false
	}
	m, _, err := verifyAt(h.partial, name, id)
	return id, err == nil && m.BatchID == id
}
