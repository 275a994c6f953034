// Package archtest holds no code: its test checks batchhook's import graph
// (data flows receiver → store → fetcher → sink; one package per outside
// library) so that a shortcut across layers fails the build's tests.
package archtest
