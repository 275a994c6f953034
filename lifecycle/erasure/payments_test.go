package erasure

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// dayFiles records the seqs it was asked to drop; fail makes the next call
// fail (a crash, or a write error, before the day files were rewritten).
type dayFiles struct {
	mu    sync.Mutex
	calls [][]uint64
	fail  bool
}

func (d *dayFiles) DropLines(_ context.Context, seqs []uint64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		d.fail = false
		return 0, errors.New("disk went away")
	}
	d.calls = append(d.calls, append([]uint64(nil), seqs...))
	return len(seqs), nil
}

func TestErasureDropsPaymentBodiesAndTheirDayFileLines(t *testing.T) {
	w := newWorld(t)
	for i, doc := range []string{cpfAForm, cpfB, cpfA} {
		body := `{"transaction":{"id":"t` + string(rune('1'+i)) + `","document_number":"` + doc + `","first_name":"Ana"}}`
		if _, _, err := w.st.RecordPayment(store.PaymentEvent{DedupKey: body, ReceivedAt: t0, BodySHA256: "s"}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	files := &dayFiles{fail: true}
	s, err := New(Options{Store: w.st, Exports: w.dir, CPFField: "cpf", Logger: zerolog.New(w.logs),
		Now: func() time.Time { return t0 }, PaymentFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	// The day files cannot be rewritten: the erasure stops, pending.
	if _, err := s.Erase(cpfA); err == nil || !strings.Contains(err.Error(), "day files") {
		t.Fatalf("erase with failing day files = %v", err)
	}
	if b, _ := w.st.PaymentBody(1); b != nil {
		t.Fatal("the store kept the body of event 1")
	}
	pending, _ := w.st.Erasures(true)
	if len(pending) != 1 {
		t.Fatalf("pending erasures = %d, want 1", len(pending))
	}
	// Resumed: the bodies are already gone, yet the day files get every
	// erased event.
	done, err := s.Resume()
	if err != nil || len(done) != 1 {
		t.Fatalf("resume = %+v %v", done, err)
	}
	if !reflect.DeepEqual(files.calls, [][]uint64{{1, 3}}) {
		t.Fatalf("DropLines calls = %v, want [[1 3]]", files.calls)
	}
	if got := done[0].Payments; len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("record payments = %+v", got)
	}
	if b, _ := w.st.PaymentBody(2); b == nil {
		t.Fatal("another person's payment body was dropped")
	}
	if !strings.Contains(w.logs.String(), `"payments":2`) || strings.Contains(w.logs.String(), cpfA) {
		t.Fatalf("logs:\n%s", w.logs)
	}
}
