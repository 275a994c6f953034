//go:build !linux

package export

import (
	"errors"
	"os"
)

// exchange is not available here; replace falls back to two renames.
func exchange(*os.File, string, *os.File, string) error {
	return errors.New("rename exchange is not supported on this system")
}
