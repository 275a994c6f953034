//go:build !unix

package store

import (
	"errors"
	"os"
	"time"
)

// lockFile is not available off unix: restore needs flock.
func lockFile(path string, wait time.Duration) (*os.File, error) {
	return nil, errors.New("restore needs flock (unix only)")
}
