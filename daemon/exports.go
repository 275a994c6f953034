package daemon

import (
	"fmt"
	"path/filepath"
)

// recoverExports repairs what a replace cut short by a crash left in the
// export staging (see export.Dir.Recover): an export found only aside is
// put back, a stale old copy (personal data) is removed. It runs at start,
// before any worker, and logs what it did.
func (d *Daemon) recoverExports() error {
	r, err := d.exports.Recover()
	if err != nil {
		name, path := d.cfg.ExportDirVar()
		return dirError(name, path, fmt.Errorf("recover export staging: %w", err))
	}
	log := d.log.With().Str("component", "daemon").Logger()
	for _, id := range r.Restored {
		log.Warn().Str("event", "export_restored").Str("batch_id", id).
			Msg("an export left aside by an interrupted replace was put back in place")
	}
	if len(r.Removed) > 0 {
		log.Info().Str("event", "export_aside_removed").Strs("batch_ids", r.Removed).
			Msg("old exports left aside after their replacement was published were removed")
	}
	if len(r.Dropped) > 0 {
		log.Info().Str("event", "export_rewrite_dropped").Strs("batch_ids", r.Dropped).
			Msg("rewrites without an erased CPF cut short by a crash were removed; their erasure resumes")
	}
	for _, name := range r.Kept {
		log.Warn().Str("event", "export_aside_kept").Str("path", filepath.Join(d.exports.Root(), ".partial", name)).
			Msg("an old export left aside is not complete and no export is published for its batch; left for an operator")
	}
	return nil
}
