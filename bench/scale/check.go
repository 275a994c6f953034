package main

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/batchhook/batchhook/store"
)

// verify opens the built database and checks what the daemon's status
// reads (the counts by state, the deliveries by sink and state, the chunks,
// the payments log) against what the shape asked for, and that the
// indexes the daemon walks agree with the records: the oldest pending
// batch, a listing by state, the purge candidates. It returns what the
// database holds.
func verify(o Options) (Expected, error) {
	if err := o.check(); err != nil {
		return Expected{}, err
	}
	want := o.expect()
	s, err := store.Open(dataDir(o.Dir), 5*time.Second)
	if err != nil {
		return want, err
	}
	defer s.Close()
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	counts, err := s.Counts()
	if err != nil {
		return want, err
	}
	for _, st := range store.States {
		if counts[st] != want.States[st] {
			fail("%d batches %s, want %d", counts[st], st, want.States[st])
		}
	}
	deliveries, err := s.DeliveryCounts()
	if err != nil {
		return want, err
	}
	for sink, by := range want.Deliveries {
		for _, st := range store.DeliveryStates {
			if deliveries[sink][st] != by[st] {
				fail("%d deliveries to %s %s, want %d", deliveries[sink][st], sink, st, by[st])
			}
		}
	}
	chunks, err := s.ChunkCounts()
	if err != nil {
		return want, err
	}
	if chunks[store.ChunkSubmitted] != want.Chunks {
		fail("%d chunks submitted, want %d", chunks[store.ChunkSubmitted], want.Chunks)
	}
	last, err := s.LastPaymentSeq()
	if err != nil {
		return want, err
	}
	if int(last) != want.Payments {
		fail("%d payment events, want %d", last, want.Payments)
	}
	if want.Payments > 0 {
		body, err := s.PaymentBody(last)
		if err != nil || body == nil {
			fail("the newest payment event has no body (%v)", err)
		}
		first, err := s.PaymentBody(1)
		if err != nil || (first != nil) != (want.PaymentBodies == want.Payments) {
			fail("the oldest payment event's body: kept %t, want %t (%v)", first != nil, want.PaymentBodies == want.Payments, err)
		}
	}
	if err := verifyIndexes(s, o, want); err != nil {
		errs = append(errs, err)
	}
	return want, errors.Join(errs...)
}

// verifyIndexes checks the indexes the daemon walks at start and in its
// passes against the records they point to.
func verifyIndexes(s *store.Store, o Options, want Expected) error {
	// The by-state index complete: the daemon's first start has nothing to
	// backfill, as on a database it wrote itself.
	if ok, err := s.StateIndexComplete(); err != nil || !ok {
		return fmt.Errorf("the by-state index is not complete (%v): the first start would index every record again", err)
	}
	at, ok, err := s.OldestPending()
	if err != nil {
		return err
	}
	if queued := want.States[store.StateQueued]; ok != (queued > 0) {
		return fmt.Errorf("oldest pending batch: found %t, want %t", ok, queued > 0)
	}
	if newest := o.plan(max(o.Batches-inflight, 0)); ok && !at.Equal(newest.created) {
		return fmt.Errorf("oldest pending batch recorded at %s, want %s", at, newest.created)
	}
	for _, st := range []store.State{store.StatePurged, store.StateExported, store.StateQueued} {
		if want.States[st] == 0 {
			continue
		}
		bs, _, err := s.List(st, 1, "")
		if err != nil {
			return err
		}
		if len(bs) != 1 || bs[0].State != st {
			return fmt.Errorf("list %s: %d batches", st, len(bs))
		}
		if st == store.StatePurged && bs[0].Tombstone == nil {
			return fmt.Errorf("purged batch %s has no tombstone", bs[0].ID)
		}
	}
	// The purge candidates a pass at Now walks: the exports due are the
	// shape's, and none newer is handed out.
	due := 0
	after := ""
	before := o.Now.Add(-time.Duration(o.ExportDays) * 24 * time.Hour)
	for o.ExportDays > 0 {
		bs, next, err := s.ExportPurgeCandidates(before, after, 5000)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.State != store.StateExported {
				return fmt.Errorf("export purge candidate %s is %s", b.ID, b.State)
			}
			if !b.FinishedAt.After(before) {
				due++
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if due != want.DueExports {
		return fmt.Errorf("%d exports due for purge at the first pass, want %d", due, want.DueExports)
	}
	return nil
}

// summary renders what a database holds for the build's last lines.
func summary(e Expected) string {
	states := maps.Clone(e.States)
	return fmt.Sprintf("batches %v; deliveries %v; submissions %d (%d chunks); payment events %d (%d with their body); due at the first purge pass: %d exports, %d records",
		states, e.Deliveries, e.Submissions, e.Chunks, e.Payments, e.PaymentBodies, e.DueExports, e.DueRecords)
}
