//go:build faultinject

package store

import (
	"errors"
	"os"
	"path/filepath"
)

// FaultFile, in the data directory of a binary built with -tags
// faultinject, makes every commit of the webhooks' writes (the group
// commit: batch records, payment events, quarantine and audit entries)
// fail: the end-to-end tests use it to prove that a storage failure
// answers 503 and never a 2xx. A root process ignores directory
// permissions, so a read-only data directory would prove nothing
// (DECISIONS 16).
const FaultFile = "FAIL_WRITES"

func (s *Store) injectedFault() error {
	if _, err := os.Stat(filepath.Join(filepath.Dir(s.db.Path()), FaultFile)); err == nil {
		return errors.New("injected storage failure (" + FaultFile + " present)")
	}
	return nil
}
