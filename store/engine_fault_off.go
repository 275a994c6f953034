//go:build !faultinject

package store

// injectedFault is the storage-failure knob of test builds (engine_fault_on.go);
// production builds have none.
func (s *Store) injectedFault() error { return nil }
