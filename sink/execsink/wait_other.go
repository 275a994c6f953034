//go:build !linux

package execsink

import "errors"

// awaitExit is not available here: run then reaps the command first and
// kills what is left of its group afterwards, which leaves a tiny window
// in which the group id could be reused.
func awaitExit(int) error { return errors.ErrUnsupported }
