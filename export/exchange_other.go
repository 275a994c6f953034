//go:build !linux

package export

import "errors"

// exchange is not available here; replace falls back to two renames.
func exchange(a, b string) error {
	return errors.New("rename exchange is not supported on this system")
}
