package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

// reportExports compares a restored database with EXPORT_DIR, which
// batchhook does not back up: an exported batch whose export is missing
// stays `exported` (a sink's delivery of it retries, saying to refetch),
// and an export whose batch the backup did not know is kept by nobody (no
// record, so no retention or erasure reaches it). Both are listed with what
// to do; nothing is changed.
func reportExports(w io.Writer, dirs config.Offline) error {
	s, err := store.Open(dirs.DataDir, time.Second)
	if err != nil {
		return err
	}
	defer s.Close()
	exp, err := export.New(dirs.ExportDir)
	if err != nil {
		return err
	}
	var missing, orphans []string
	cursor := ""
	for {
		page, next, err := s.List(store.StateExported, 1000, cursor)
		if err != nil {
			return fmt.Errorf("list exported batches: %w", err)
		}
		for _, b := range page {
			if b.ExportRemoved {
				continue // removed on purpose once every sink had it
			}
			if _, _, _, ok, err := exp.Published(b.ID); err != nil {
				return fmt.Errorf("check the export of %s: %w", b.ID, err)
			} else if !ok {
				missing = append(missing, b.ID)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	entries, err := os.ReadDir(exp.Root())
	if err != nil {
		return fmt.Errorf("list EXPORT_DIR: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // staging and set-aside entries start with a dot
		}
		if _, err := s.Get(e.Name()); errors.Is(err, store.ErrNotFound) {
			orphans = append(orphans, e.Name())
		} else if err != nil {
			return fmt.Errorf("look up batch %s: %w", e.Name(), err)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "%d exported batches have no complete export in %s; restore EXPORT_DIR from the same time, "+
			"or, with the daemon running, refetch each while the provider keeps its results (7 days): "+
			"batchhook batches refetch ID\n  %s\n", len(missing), exp.Root(), someIDs(missing))
	}
	if len(orphans) > 0 {
		fmt.Fprintf(w, "%d exports in %s belong to no batch of the restored database (exported after the backup); "+
			"no retention or erasure reaches them: delete them, or record one again with batchhook track ID "+
			"while the provider still knows it\n  %s\n", len(orphans), exp.Root(), someIDs(orphans))
	}
	if len(missing)+len(orphans) == 0 {
		fmt.Fprintf(w, "every exported batch has its export in %s, and every export there has its batch\n", exp.Root())
	}
	return nil
}

// someIDs lists up to 20 ids.
func someIDs(ids []string) string {
	if len(ids) <= 20 {
		return strings.Join(ids, " ")
	}
	return strings.Join(ids[:20], " ") + fmt.Sprintf(" … and %d more", len(ids)-20)
}
