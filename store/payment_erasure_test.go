package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestErasePaymentsDropsTheBodiesHoldingTheCPF(t *testing.T) {
	s := openTest(t, t.TempDir())
	s.SetPaymentSinks([]string{"file", "http"})
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	bodies := []string{
		`{"transaction":{"document_number":"` + cpfA + `","first_name":"Maria"}}`,                        // 1: hit
		`{"transaction":{"document_number":"529.982.247-25"}}`,                                           // 2: hit, other form
		`{"transaction":{"document_number":"` + cpfB + `"}}`,                                             // 3: another person
		`{"transaction":{"document_number":"` + cpfB + `","events":[{"pix_key_value":"` + cpfA + `"}]}}`, // 4: hit elsewhere
		`{"transaction":{"document_number":12345}}`,                                                      // 5: no CPF
		`{"transaction":{"document_number":"\u00352998224725"}}`,                                         // 6: hit, only once decoded
	}
	for i, b := range bodies {
		if _, _, err := s.RecordPayment(PaymentEvent{DedupKey: fmt.Sprint("k", i), ReceivedAt: at, BodySHA256: fmt.Sprint("sha", i+1)}, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PaymentsDelivered("file", 2, at); err != nil {
		t.Fatal(err)
	}
	e, _, err := s.BeginErasure("hash-a", at)
	if err != nil {
		t.Fatal(err)
	}
	match := func(d string) bool { return d == cpfA }
	now := at.Add(time.Hour)
	got, err := s.ErasePayments(e.ID, match, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []ErasedPayment{{Seq: 1, SHA256: "sha1", Sinks: []string{"file"}}, {Seq: 2, SHA256: "sha2", Sinks: []string{"file"}},
		{Seq: 4, SHA256: "sha4"}, {Seq: 6, SHA256: "sha6"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("erased %+v\nwant   %+v", got, want)
	}
	for seq := uint64(1); seq <= 6; seq++ {
		ev, _ := s.PaymentEvent(seq)
		erased := seq != 3 && seq != 5
		if hasBody(t, s, seq) == erased || (ev.ErasedBy == e.ID) != erased || ev.BodyDroppedAt.Equal(now) != erased {
			t.Errorf("seq %d: body kept %v, erased_by %q, dropped %v", seq, hasBody(t, s, seq), ev.ErasedBy, ev.BodyDroppedAt)
		}
		if ev.BodySHA256 != fmt.Sprint("sha", seq) {
			t.Errorf("seq %d lost its sha256", seq)
		}
	}
	// Run again (a resumed erasure): nothing new, the full list returned,
	// the record unchanged.
	again, err := s.ErasePayments(e.ID, match, now.Add(time.Hour))
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("second run = %+v %v", again, err)
	}
	done, err := s.FinishErasure(e.ID, nil, now)
	if err != nil || !reflect.DeepEqual(done.Payments, want) || !done.Touched() {
		t.Fatalf("record = %+v %v", done, err)
	}
	if ev, _ := s.PaymentEvent(1); !ev.BodyDroppedAt.Equal(now) {
		t.Fatal("the second run moved BodyDroppedAt")
	}
	// The dedup index stays: a replay is a duplicate.
	if seq, created, _ := s.RecordPayment(PaymentEvent{DedupKey: "k0", ReceivedAt: now}, []byte("{}")); created || seq != 1 {
		t.Fatalf("replay after erasure: %d %v", seq, created)
	}
}

func TestErasePaymentsWalksMoreThanOneBatch(t *testing.T) {
	s := openTest(t, t.TempDir())
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	n := erasePaymentBatch*2 + 7
	for i := range n {
		doc := cpfB
		if i%100 == 0 || i == n-1 {
			doc = cpfA
		}
		if _, _, err := s.RecordPayment(PaymentEvent{DedupKey: fmt.Sprint("k", i), ReceivedAt: at},
			[]byte(`{"transaction":{"document_number":"`+doc+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	e, _, _ := s.BeginErasure("hash-a", at)
	got, err := s.ErasePayments(e.ID, func(d string) bool { return d == cpfA }, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 || got[len(got)-1].Seq != uint64(n) { // 0, 100, …, 1000 and the last
		t.Fatalf("erased %d events, last %+v", len(got), got[len(got)-1])
	}
	for _, g := range got {
		if hasBody(t, s, g.Seq) {
			t.Fatalf("seq %d kept its body", g.Seq)
		}
	}
}
