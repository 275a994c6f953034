// Package e2e holds the end-to-end tests: TestMain builds the real
// batchhook binary (./cmd/batchhook, with -race) and the tests run it as an
// operator would, against the provider simulator, real sinks and real
// signals on loopback. The crash soaks and the interleaving test
// (interleave_*_test.go; flags -soak, -interleave.seed,
// -interleave.duration) live here too, and so do the power-loss tests
// (powerloss_e2e_test.go on the first run, powerloss_steady_e2e_test.go
// and powerloss_check_e2e_test.go in the steady state; flags
// -powerloss.seed, -powerloss.duration),
// which run the daemon on internal/powerloss and cut the power under it. The package has no code of its
// own: everything is in its test files.
package e2e
