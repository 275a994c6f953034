package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// keptTimeFormat names a kept database by its UTC time to the nanosecond,
// fixed width so that the names sort in time order: two restores or
// compactions in the same second must not collide.
const keptTimeFormat = "20060102T150405.000000000Z"

// maxKeptSuffix bounds the counter added when a name is taken anyway (a
// fixed clock, or a coarse one).
const maxKeptSuffix = 99

// keepAs hard-links the database at path to a new
// batchhook.db.bak-<time> in dir and returns that name. When the name is
// taken it adds -01, -02, … (still sorting after the bare name), never
// replacing a kept copy.
func keepAs(dir, path string, now time.Time) (string, error) {
	base := filepath.Join(dir, FileName+".bak-"+now.UTC().Format(keptTimeFormat))
	name := base
	for n := 1; ; n++ {
		err := os.Link(path, name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) || n > maxKeptSuffix {
			return "", fmt.Errorf("keep the current database as %s: %w", name, err)
		}
		name = fmt.Sprintf("%s-%02d", base, n)
	}
}
