// Package browser holds the operator's console's browser tests: TestMain
// builds the real batchhook binary (./cmd/batchhook, with -race), and the
// tests drive headless Chromium (Debian's chromium package) through the
// DevTools protocol against that binary, the provider simulator and an
// http sink on loopback, as an operator would click through the pages.
// It is a package of its own so that it runs beside e2e, not after it.
// The package has no code of its own: everything is in its test files.
//
// BATCHHOOK_SCREENSHOTS=<dir> keeps the screenshots the tests take, under
// stable names (console-overview.png, …); docs/console.md shows them.
package browser
