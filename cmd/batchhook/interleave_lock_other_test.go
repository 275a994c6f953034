//go:build !linux

package main

import "errors"

func setImmutable(string, bool) error { return errors.New("no immutable attribute here") }

func isImmutable(string) bool { return false }
