package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/batchhook/batchhook/store"
)

// dataDir is the daemon's DATA_DIR inside the build directory.
func dataDir(dir string) string { return filepath.Join(dir, "data") }

// build writes the database the options describe, through the store's
// own write code in bulk (store.BulkLoad), and reports its progress to
// log. The data directory must not hold a database yet.
func build(o Options, log io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	data := dataDir(o.Dir)
	if _, err := os.Stat(filepath.Join(data, store.FileName)); err == nil {
		return fmt.Errorf("%s already holds a database: build into a new directory", data)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	abs, err := filepath.Abs(data)
	if err != nil {
		return err
	}
	s, err := store.Open(data, 5*time.Second)
	if err != nil {
		return err
	}
	defer s.Close()
	ids := makeIDs(o)
	step := func(what string, start time.Time) {
		fmt.Fprintf(log, "scale: %s in %s\n", what, time.Since(start).Round(time.Millisecond))
	}
	err = s.BulkLoad(func(l *store.Loader) error {
		t := time.Now()
		if err := l.Positions(ids); err != nil {
			return err
		}
		step(fmt.Sprintf("%d ids indexed", len(ids)), t)
		t = time.Now()
		if err := loadBatches(l, o, ids, filepath.Join(abs, "exports")); err != nil {
			return err
		}
		step(fmt.Sprintf("%d batch records and %d submissions written", len(ids), o.Batches/submissionEvery+1), t)
		t = time.Now()
		if err := loadDeliveries(l, o, ids); err != nil {
			return err
		}
		step(fmt.Sprintf("deliveries to %s written", strings.Join(o.sinks(), ", ")), t)
		t = time.Now()
		n, err := loadPayments(l, o)
		if err != nil {
			return err
		}
		step(fmt.Sprintf("%d payment events written", n), t)
		return nil
	})
	if err != nil {
		return err
	}
	t := time.Now()
	n, err := writeDueExports(o, ids, filepath.Join(abs, "exports"))
	if err != nil {
		return err
	}
	step(fmt.Sprintf("%d exports due at the first purge pass written, %d items each", n, o.ExportItems), t)
	return nil
}

// makeIDs returns the batches' ids in arrival order, random like the
// provider's.
func makeIDs(o Options) []string {
	rng := rand.New(rand.NewPCG(o.Seed, 0xba7c4))
	ids := make([]string, o.Batches)
	seen := make(map[string]bool, o.Batches)
	for i := range ids {
		for {
			var r [10]byte
			for j := range r {
				r[j] = byte(rng.Uint32())
			}
			if id := batchID(r); !seen[id] {
				ids[i], seen[id] = id, true
				break
			}
		}
	}
	return ids
}

// batchesPerTx bounds the batches one load transaction writes. A batch
// passes through queued, fetching and exported on its way to purged, and
// each move puts and deletes its by-state index entry, in front of the
// purged entries of the same leaf; bbolt splits a leaf only at the
// commit, so each move shifts every entry the transaction added there.
// In the first transaction the whole index is one leaf, and one of the
// loader's full size (about 85,000 batches) costs the square of it:
// 100,000 batches with a thin payments log took 58 s to build, 7 s in
// transactions of this size.
const batchesPerTx = 4096

// loadBatches writes every batch's record in arrival order, and the
// submissions as their first batch comes, committing every batchesPerTx
// batches.
func loadBatches(l *store.Loader, o Options, ids []string, exports string) error {
	for i, id := range ids {
		p := o.plan(i)
		if p.submitted && p.chunk == 0 {
			if err := addSubmission(l, o, ids, i); err != nil {
				return err
			}
		}
		if err := l.AddBatch(batchOf(o, p, id, exports)); err != nil {
			return err
		}
		if (i+1)%batchesPerTx == 0 {
			if err := l.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchOf is batch id's record as the pipeline left it by plan p.
func batchOf(o Options, p batchPlan, id, exports string) store.Batch {
	found := int64(cpfsPerBatch) - p.notFound
	total := int64(cpfsPerBatch)
	completed := p.created.Add(-20 * time.Second).Truncate(time.Second)
	raw := completedBody(id, found, p.notFound, completed)
	b := store.Batch{
		ID: id, State: p.state,
		Notification: store.Notification{
			Event: "batch.completed", BatchID: id, Status: "completed",
			TotalRequested: &total, TotalFound: &found, TotalNotFound: &p.notFound, CompletedAt: &completed,
			Attempt: 1, ReceivedAt: p.created, Source: store.SourceWebhook, Raw: raw,
		},
		NextAttemptAt: p.created, CreatedAt: p.created, UpdatedAt: p.created,
	}
	if p.submitted {
		b.SubmissionID, b.Chunk, b.CPFCount, b.SubmittedAt = submissionID(o, p.sub), p.chunk, cpfsPerBatch, submittedAt(p.created)
	}
	if p.state == store.StateQueued {
		return b
	}
	var seen strings.Builder
	for pg := range pagesPerBatch - 1 {
		seen.WriteString(hexOf(mix(o.Seed^0xc5, uint64(p.created.UnixNano())+uint64(pg)), 16))
	}
	b.Checkpoint = store.Checkpoint{Done: true, StagedBytes: total * itemBytes, Items: total, Pages: pagesPerBatch, Seen: seen.String()}
	b.FinishedAt, b.UpdatedAt = p.finished, p.finished
	b.ExportPath = filepath.Join(exports, id)
	if !p.exportPurged.IsZero() {
		b.ExportPath, b.UpdatedAt = "", p.exportPurged
		b.Tombstone = &store.Tombstone{
			PurgedAt: p.exportPurged, ExportPurgedAt: p.exportPurged, ExportedAt: p.finished,
			ManifestSHA256: sha256Hex([]byte(id + "/results.ndjson")), ManifestItems: total,
		}
	}
	if !p.recordPurged.IsZero() {
		if b.Tombstone == nil {
			b.Tombstone = &store.Tombstone{PurgedAt: p.recordPurged}
		}
		b.Tombstone.RecordPurgedAt, b.Tombstone.RawSHA256 = p.recordPurged, sha256Hex(raw)
		b.Notification.Raw = nil
		b.Checkpoint.Cursor, b.Checkpoint.Seen = "", ""
		b.UpdatedAt = p.recordPurged
	}
	return b
}

// submissionID is submission sub's id, shaped like the submitter's ("s_"
// and 20 hex digits).
func submissionID(o Options, sub int) string {
	return "s_" + hexOf(mix(o.Seed^0x5b, uint64(sub)), 16) + hexOf(mix(o.Seed^0x5c, uint64(sub)), 4)
}

// submittedAt is when the provider accepted a chunk whose batch.completed
// came at created.
func submittedAt(created time.Time) time.Time { return created.Add(-5 * time.Minute) }

// addSubmission writes the submission whose first chunk became batch
// first: chunksPerSub chunks, each accepted as one of the batches that
// follow, its CPFs dropped at acceptance (the store keeps none after).
func addSubmission(l *store.Loader, o Options, ids []string, first int) error {
	p := o.plan(first)
	at := submittedAt(p.created)
	sub := store.Submission{
		ID: submissionID(o, p.sub), Lines: chunksPerSub*cpfsPerBatch + 10, Valid: chunksPerSub * cpfsPerBatch,
		Duplicates: 6, Invalid: 4, CreatedAt: at.Add(-2 * time.Minute),
	}
	var chunks []store.Chunk
	for c := range chunksPerSub {
		i := first + c
		if i >= len(ids) || !o.plan(i).submitted {
			break
		}
		sent := submittedAt(o.plan(i).created)
		chunks = append(chunks, store.Chunk{State: store.ChunkSubmitted, CPFCount: cpfsPerBatch, BatchID: ids[i],
			Attempts: 1, SentAt: sent, UpdatedAt: sent})
	}
	return l.AddSubmission(sub, chunks)
}

// loadDeliveries writes every exported batch's deliveries, in batch id
// order (the deliveries' keys).
func loadDeliveries(l *store.Loader, o Options, ids []string) error {
	if o.Sinks == 0 {
		return nil
	}
	order := make([]int32, len(ids))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ids[a], ids[b]) })
	for _, i32 := range order {
		i := int(i32)
		p := o.plan(i)
		if p.state == store.StateQueued {
			continue
		}
		for k, sink := range o.sinks() {
			d := store.Delivery{BatchID: ids[i], Sink: sink, State: o.deliveryPlan(i, k), Generation: 1, Attempts: 1,
				NextAttemptAt: p.finished, CreatedAt: p.finished, QueuedAt: p.finished}
			switch d.State {
			case store.DeliveryDelivered:
				d.DeliveredAt, d.PartsDone = p.finished.Add(time.Duration(2+k)*time.Second), pagesPerBatch
			case store.DeliveryPending:
				d.NextAttemptAt = p.finished.Add(time.Minute)
				d.LastError, d.ErrorKind = "the sink answered 503 Service Unavailable", "transient"
			case store.DeliveryFailed:
				d.Attempts = 5
				d.LastError, d.ErrorKind = "the sink answered 400 Bad Request", "permanent"
			}
			if err := l.AddDelivery(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadPayments writes the payments log, oldest first, and the payment
// sinks' cursors through its end (every event handled). It returns how
// many events it wrote.
func loadPayments(l *store.Loader, o Options) (int, error) {
	n := o.payments()
	for j := range n {
		at := o.paymentAt(j)
		event, txID, body, dedup := paymentEvent(o.Seed, j, at)
		e := store.PaymentEvent{ReceivedAt: at, Event: event, Attempt: 1, DedupKey: dedup, BodySHA256: sha256Hex(body), TransactionID: txID}
		if age := o.Now.Sub(at); o.FullDays > 0 && age >= o.fullKeep() {
			lag := time.Duration(fraction(mix(o.Seed^0x9b, uint64(j))) * float64(purgeLag))
			e.BodyDroppedAt = o.purgedAt(at, o.FullDays, lag)
		}
		if err := l.AddPayment(e, body); err != nil {
			return j, err
		}
	}
	if n == 0 {
		return 0, nil
	}
	for _, sink := range append([]string{"file"}, o.sinks()...) {
		if sink != "file" && !paymentSinks[sink] {
			continue
		}
		if err := l.SetPaymentCursor(sink, uint64(n), o.paymentAt(n-1)); err != nil {
			return n, err
		}
	}
	return n, nil
}
