// Package store is the durable bottom of batchhook: it owns the bbolt file
// in the data directory and every record batchhook keeps in it. No other
// package imports bbolt and no exported signature mentions it. Every
// exported method is one transaction, committed with fsync before it
// returns, so a caller that replies 2xx after a nil error has made its
// write durable; the webhooks' methods that take a context may return
// ErrSlowCommit first, promising nothing (their write goes on).
//
// The nouns. Each file is named by the noun it keeps, so the listing of
// the directory reads as a table of contents:
//   - batch*.go: the batch record (batch.go), its states and their table
//     (batch_state.go), its encoding and layout on disk, the fetch queue and
//     its leases, checkpoints, the reconciliation of submitted and tracked
//     batches, refetch, lookups, listings and counts;
//   - notification*.go: the batch.completed deliveries and how a webhook
//     records one (Record, Known);
//   - submission.go, chunk*.go: the CPF intakes and the chunks sent to the
//     provider;
//   - delivery*.go: one batch's export to one sink, queued, retried and
//     versioned;
//   - payment*.go: the payments webhook's event log, its outbox per sink,
//     its purge and its erasure;
//   - erasure*.go: the erasure of one CPF from everything kept;
//   - purge*.go: retention: tombstones, the export and record purges and the
//     sweeps of quarantine, audit entries and chunk CPFs;
//   - removal.go: file removals, the one crash-safe record that an export's
//     files are to be deleted, whether after a purge or after every sink
//     had the export;
//   - quarantine*.go, audit.go, received.go, rejected.go: signed deliveries
//     kept whole (quarantined, audited) and the last rejected ones;
//   - meta.go, migrate.go: values made once per database, and what Open does
//     to a database an earlier version wrote (buckets, layout, backfills).
//
// The engine. The engine_*.go files are the storage engine under the nouns:
// the durable handle (engine_durable.go: no read answers from a commit that
// has not returned, and a failed commit fails the store closed), the group
// commit the webhooks share (engine_group.go), opening with the store's
// bbolt settings and never through a symbolic link (engine_open.go,
// engine_nofollow_*.go), the data-dir lock and the offline swap behind
// restore and compaction (engine_lock_*.go, engine_swap*.go), the backup
// stream and the consistency check (engine_backup.go), the release of
// mapped pages (engine_mapped*.go) and the fault knob of test builds
// (engine_fault_*.go). store.go assembles the two at Open. The nouns use
// the engine through a narrow API only: a *bolt.Tx from the durable
// handle's Update or View, viewAt, mark and settled for a webhook's
// lookups, and the group commit's write; engine_boundary_test.go holds
// them to it. The engine is files of this package, not a subpackage: its
// contract with the nouns is the *bolt.Tx they share (one transaction
// spans several nouns and the engine's commit tracking), and its promises
// are tested from the nouns' side, by staging a commit whose fsync has not
// returned (holding the write lock, marking keys, failing the commit) and
// checking what Known, PaymentKnown and Backup answer meanwhile. In a
// subpackage those tests would need hooks exported on the production type
// for their sake alone.
//
// The state table. A batch moves only along the arrows of the diagram on
// State (batch_state.go). The table transitions holds those arrows,
// setState, through which every change of a batch's state goes, refuses
// any other move with ErrTransition, and a test reads the diagram and fails
// when it and the table differ.
package store
