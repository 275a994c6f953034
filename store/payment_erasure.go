package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/cpf"
)

// erasePaymentBatch bounds the bodies one transaction of ErasePayments
// examines, so the receiver's commits never wait long behind an erasure.
const erasePaymentBatch = 500

// ErasePayments drops the body of every payment event that holds the CPF
// match recognises, keeping the event (seq, dedup key, sha256) with
// ErasedBy set to erasure id and BodyDroppedAt to now. A body holds it when
// its transaction.document_number normalizes to it, or when a CPF-shaped
// run anywhere in it does (the document does not show the events' bodies:
// a pix key or a message may carry the CPF too). The log is walked in
// transactions of erasePaymentBatch bodies, each noting what it erased in
// the erasure's record (Erasure.Payments, with the payment sinks that had
// already received each event); a crash in between is resumed by running
// it again, which finds the erased bodies gone.
//
// It returns every payment event the erasure has erased so far, those of
// an interrupted earlier run included, so that the caller can finish what
// follows (the day files' lines) whatever run erased them.
func (s *Store) ErasePayments(id string, match func(digits string) bool, now time.Time) ([]ErasedPayment, error) {
	var (
		after uint64
		all   []ErasedPayment
	)
	for {
		var done bool
		err := s.db.Update(func(tx *bolt.Tx) error {
			var hits []ErasedPayment
			c := tx.Bucket(bucketPaymentBodies).Cursor()
			examined := 0
			k, v := c.Seek(seqKey(after + 1))
			for ; k != nil && examined < erasePaymentBatch; k, v = c.Next() {
				examined++
				seq := binary.BigEndian.Uint64(k)
				after = seq
				if !paymentHolds(v, match) {
					continue
				}
				e, err := getPaymentEvent(tx, seq)
				if err != nil {
					return err
				}
				hits = append(hits, ErasedPayment{Seq: seq, SHA256: e.BodySHA256, Sinks: s.paymentReceivers(tx, seq)})
			}
			done = k == nil
			// Deleted after the walk: a bucket changed under its cursor
			// may skip keys.
			for _, h := range hits {
				if err := dropPaymentBody(tx, h.Seq, now, id); err != nil {
					return err
				}
			}
			return updateErasure(tx, id, func(e *Erasure) error {
				for _, h := range hits {
					if !slices.ContainsFunc(e.Payments, func(p ErasedPayment) bool { return p.Seq == h.Seq }) {
						e.Payments = append(e.Payments, h)
					}
				}
				all = slices.Clone(e.Payments)
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("erase from payment events: %w", err)
		}
		if done {
			return all, nil
		}
	}
}

// paymentHolds reports whether a payment body holds a CPF match
// recognises: its transaction.document_number, or any CPF-shaped run.
func paymentHolds(raw []byte, match func(string) bool) bool {
	var body struct {
		Transaction struct {
			DocumentNumber json.RawMessage `json:"document_number"`
		} `json:"transaction"`
	}
	if json.Unmarshal(raw, &body) == nil {
		var doc string
		if json.Unmarshal(body.Transaction.DocumentNumber, &doc) == nil && doc != "" && matchCPF(doc, match) {
			return true
		}
	}
	return slices.ContainsFunc(cpf.Candidates(raw), match)
}

// paymentReceivers lists the payment sinks that had delivered event seq.
func (s *Store) paymentReceivers(tx *bolt.Tx, seq uint64) []string {
	var out []string
	for _, sink := range s.PaymentSinks() {
		c, err := getCursor(tx, sink)
		if err != nil {
			continue
		}
		if paymentDelivery(tx, c, seq).State == DeliveryDelivered {
			out = append(out, sink)
		}
	}
	return out
}
