package dispatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
)

// eraseFirst is the real file sink with an erasure committed (store, then
// day files, as lifecycle/erasure does) after the dispatcher read the run
// and before the sink writes it: the interleaving of an erasure that
// arrives while a run is in flight.
type eraseFirst struct {
	*filesink.Sink
	erase func()
	once  bool
}

func (s *eraseFirst) DeliverPayments(ctx context.Context, ps []sink.Payment) (int, sink.Result) {
	if !s.once {
		s.once = true
		s.erase()
	}
	return s.Sink.DeliverPayments(ctx, ps)
}

// TestErasedPaymentNeverReachesTheDayFile: an erasure that drops an
// event's body and its day-file lines while the file sink holds a run read
// before it must not let that run write the event's line afterwards (the
// erasure would be reported done with the CPF still on disk).
func TestErasedPaymentNeverReachesTheDayFile(t *testing.T) {
	e := newPayEnv(t, "file")
	exportDir := t.TempDir()
	var seqs []uint64
	for i, doc := range []string{"11144477735", "52998224725", "11144477735"} {
		seq, _, err := e.st.RecordPayment(store.PaymentEvent{ReceivedAt: t0, Event: "transaction.paid", Attempt: 1,
			DedupKey: fmt.Sprint("k", i)}, []byte(fmt.Sprintf(`{"transaction":{"id":"tx-%d","document_number":%q}}`, i+1, doc)))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	fs, err := filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	victim := seqs[1]
	s := &eraseFirst{Sink: fs, erase: func() {
		er, _, err := e.st.BeginErasure("hash-x", e.clock())
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.st.ErasePayments(er.ID, func(d string) bool { return d == "52998224725" }, e.clock())
		if err != nil || len(got) != 1 || got[0].Seq != victim {
			t.Fatalf("erase = %v %v", got, err)
		}
		if _, err := fs.DropLines(context.Background(), []uint64{victim}); err != nil {
			t.Fatal(err)
		}
	}}
	p := e.payments(t, nil, nil, s)
	drain(t, p, "file")
	raw, err := os.ReadFile(filepath.Join(exportDir, filesink.Dir, filesink.DayOf(t0)+".ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `52998224725`) {
		t.Fatalf("the erased event's line is in the day file after the erasure finished:\n%s", raw)
	}
	if !strings.Contains(string(raw), `"id":"tx-1"`) || !strings.Contains(string(raw), `"id":"tx-3"`) {
		t.Fatalf("the other events are missing:\n%s", raw)
	}
	ds, err := e.st.PaymentDeliveries(victim)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryFailed || ds[0].ErrorKind != KindBodyDropped {
		t.Fatalf("the erased event's delivery to file = %+v %v; want failed, %s", ds, err, KindBodyDropped)
	}
}
