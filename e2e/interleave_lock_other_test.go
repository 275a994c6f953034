//go:build !linux

package e2e

import "errors"

func setImmutable(string, bool) error { return errors.New("no immutable attribute here") }

func isImmutable(string) bool { return false }
