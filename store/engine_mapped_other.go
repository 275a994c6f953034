//go:build !linux

package store

// dontNeed does nothing outside Linux.
func dontNeed(addr, length uintptr) error { return nil }
