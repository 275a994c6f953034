package purge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/lifecycle/purge"
	"github.com/batchhook/batchhook/store"
)

// countingStore counts the purger's write transactions on the export side.
type countingStore struct {
	*store.Store
	mu                 sync.Mutex
	groups, groupSizes []int
	dones              int
}

func (c *countingStore) PurgeExports(reqs []store.ExportPurgeRequest, now time.Time) ([]store.ExportPurgeOutcome, error) {
	c.mu.Lock()
	c.groupSizes = append(c.groupSizes, len(reqs))
	c.mu.Unlock()
	return c.Store.PurgeExports(reqs, now)
}

func (c *countingStore) FileRemovalsDone(rs []store.FileRemoval) error {
	c.mu.Lock()
	c.dones++
	c.mu.Unlock()
	return c.Store.FileRemovalsDone(rs)
}

// checkedFiles fails the test if an export is deleted before its record
// says purged with its file removal recorded: what a crash at that moment
// would leave must be finishable by the next pass.
type checkedFiles struct {
	files
	t     *testing.T
	st    *store.Store
	calls *atomic.Int32
}

func (f checkedFiles) Purge(ids []string) []error {
	rs, rerr := f.st.FileRemovals()
	for _, id := range ids {
		b, err := f.st.Get(id)
		if err != nil || b.State != store.StatePurged || b.Tombstone == nil {
			f.t.Errorf("%s deleted from disk while its record is %v (%v)", id, b, err)
		}
		if !slices.ContainsFunc(rs, func(r store.FileRemoval) bool { return r.BatchID == id && r.Purge }) {
			f.t.Errorf("%s deleted from disk before its removal was recorded: %v %v", id, rs, rerr)
		}
	}
	f.calls.Add(1)
	return f.files.Purge(ids)
}

// A pass purges exports a group at a time: one commit for a group's
// tombstones and one for its removals, not two for every export, and
// still deletes no file before its record says so.
func TestPassPurgesExportsInGroups(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 7 {
		id := fmt.Sprintf("g%d", i)
		ids = append(ids, id)
		e.export(t, id, t0)
	}
	e.export(t, "young", t0.Add(20*day))
	cs := &countingStore{Store: e.st}
	var calls atomic.Int32
	p, err := purge.New(purge.Options{Store: cs, Files: checkedFiles{files{e.dir}, t, e.st, &calls}, Logger: zerolog.New(e.logs),
		Observer: e.obs, ExportRetention: month, Interval: time.Hour, TxLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Pass(context.Background(), t0.Add(month+time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Purged[purge.KindExport] != 7 {
		t.Fatalf("purged %v, want 7 exports", r.Purged)
	}
	if !slices.Equal(cs.groupSizes, []int{3, 3, 1}) || cs.dones != 3 || calls.Load() != 3 {
		t.Fatalf("groups of %v, %d removal commits and %d deletions of files, want [3 3 1], 3 and 3", cs.groupSizes, cs.dones, calls.Load())
	}
	for _, id := range ids {
		if exists(t, e.dir.Path(id)) {
			t.Fatalf("%s survived the purge", id)
		}
		if b, _ := e.st.Get(id); b.State != store.StatePurged {
			t.Fatalf("%s is %s", id, b.State)
		}
	}
	if rs, _ := e.st.FileRemovals(); len(rs) != 0 {
		t.Fatalf("removals left: %v", rs)
	}
}

// In one group, a batch with a pending delivery and one no longer exported
// are left as they are and do not stop the others.
func TestPurgeExportsLeavesRefusedBatchesAndPurgesTheRest(t *testing.T) {
	e := newEnv(t)
	e.export(t, "a", t0)
	e.export(t, "c", t0)
	e.st.SetSinks([]string{"http"})
	e.export(t, "b", t0) // its delivery to http is pending
	n := int64(1)
	if _, err := e.st.Record(store.Notification{Event: "batch.completed", BatchID: "q", Status: "completed", TotalRequested: &n,
		ReceivedAt: t0, Source: store.SourceWebhook, Raw: []byte(`{"batch_id":"q"}`)}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(month + time.Hour)
	outs, err := e.st.PurgeExports([]store.ExportPurgeRequest{{ID: "a"}, {ID: "b"}, {ID: "gone"}, {ID: "q"}, {ID: "c"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Err != nil || outs[0].Batch == nil || outs[4].Err != nil || outs[4].Batch == nil {
		t.Fatalf("a, c = %+v, %+v: want purged", outs[0], outs[4])
	}
	if !errors.Is(outs[1].Err, store.ErrDeliveryPending) || !errors.Is(outs[2].Err, store.ErrNotFound) || !errors.Is(outs[3].Err, store.ErrState) {
		t.Fatalf("b, gone, q = %v, %v, %v", outs[1].Err, outs[2].Err, outs[3].Err)
	}
	if q, _ := e.st.Get("q"); q.State != store.StateQueued {
		t.Fatalf("q = %s, want queued as it was", q.State)
	}
	if b, _ := e.st.Get("b"); b.State != store.StateExported || b.Tombstone != nil {
		t.Fatalf("b = %s %+v, want exported as it was", b.State, b.Tombstone)
	}
	rs, _ := e.st.FileRemovals()
	if len(rs) != 2 || rs[0].BatchID != "a" || rs[1].BatchID != "c" {
		t.Fatalf("removals = %v, want a and c", rs)
	}
}
