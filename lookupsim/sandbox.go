package lookupsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
)

// Simulation actions of the sandbox (docs/provider-api.md §4.4): pay a deposit,
// receive or refund a withdrawal.
const (
	ActionPay     = "pay"
	ActionReceive = "receive"
	ActionRefund  = "refund"
)

// errNotPending: a simulation on a transaction that has already moved on.
var errNotPending = errors.New("not_pending")

// create records a new pending transaction from validated fields and
// returns the gateway's reply body {"transaction":{…}}.
func (s *Server) create(flow string, f map[string]string, sandbox string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	s.pruneTxLocked(now)
	t := &transaction{
		id: newUUID(), userID: newUUID(), processorID: newUUID(), merchantTxID: f["merchant_transaction_id"],
		firstName: f["first_name"], lastName: f["last_name"], documentNumber: f["document_number"],
		status: TxPending, flowType: flow, createdAt: now, updatedAt: now,
		eventID: newUUID(), success: true, amount: formatAmount(f["amount"]),
		eventCreated: now, eventUpdated: now,
	}
	if flow == flowCashin {
		email, ip := f["email"], f["ip_address"]
		t.email, t.ipAddress = &email, &ip
		t.eventType, t.pixMessage = "auth", f["message"]
		t.processorTxID = newUUID()
		t.qrcode = sandbox + "/api/transactions/" + t.processorTxID + "/" + ActionPay
		s.byProc[t.processorTxID] = t
	} else {
		kind, key := f["pix_key_type"], f["pix_key_value"]
		t.pixKeyType, t.pixKey = &kind, &key
		t.eventType, t.pixMessage = "payment", f["pix_message"]
		// transaction_ref is the transaction's own id (our assumption).
		t.qrcode = sandbox + "/api/transactions/" + t.id + "/" + ActionReceive
	}
	s.txs[t.id] = t
	s.stats.TransactionsCreated++
	body, err := json.Marshal(struct {
		Transaction txJSON `json:"transaction"`
	}{s.wireLocked(t)})
	if err != nil {
		return nil, fmt.Errorf("encode transaction: %w", err)
	}
	s.opts.Logf("lookupsim: transaction %s created: %s, pending", t.id, flow)
	return body, nil
}

// pruneTxLocked forgets transactions unchanged for longer than Retention,
// so a long-running simulator does not grow without end.
func (s *Server) pruneTxLocked(now time.Time) {
	for id, t := range s.txs {
		if now.Sub(t.updatedAt) > s.opts.Retention {
			delete(s.txs, id)
			delete(s.byProc, t.processorTxID)
		}
	}
}

// SimulationResult is what a simulation URL answers (to a browser or the
// CLI): what happened, and whether a payment webhook was queued.
type SimulationResult struct {
	Result        string `json:"result"`
	TransactionID string `json:"transaction_id"`
	FlowType      string `json:"flow_type"`
	Status        string `json:"status"`
	Event         string `json:"event"`
	Webhook       string `json:"webhook"` // "queued", "not_configured" or "dropped"
}

// handleSimulate serves {sandbox_url}/api/transactions/<ref>/<action>,
// by GET (a browser) or POST.
func (s *Server) handleSimulate(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Simulations++ })
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{"method_not_allowed"})
		return
	}
	reply, err := s.Simulate(r.PathValue("ref"), r.PathValue("action"))
	var np *NotPendingError
	switch {
	case errors.As(err, &np):
		writeJSON(w, http.StatusConflict, struct {
			Error  string `json:"error"`
			Status string `json:"status"`
		}{np.Error(), np.Status})
	case err != nil:
		writeError(w, err)
	default:
		writeJSON(w, http.StatusOK, reply)
	}
}

// NotPendingError: a simulation asked of a transaction that is no longer
// pending (HTTP 409).
type NotPendingError struct {
	Status string // the transaction's status now
}

func (e *NotPendingError) Error() string {
	return "transaction is " + e.Status + ", not pending"
}

// Unwrap lets errors.Is(err, errNotPending) hold.
func (e *NotPendingError) Unwrap() error { return errNotPending }

// Simulate is the in-process twin of opening a simulation URL: action is
// pay (ref = a deposit's processor_transaction_id), receive or refund (ref
// = a withdrawal's transaction id). It moves the transaction on and
// queues the signed payment webhook. Errors: ErrNotFound (unknown ref, or
// an action that does not fit the transaction's flow), a
// *NotPendingError, ErrClosed.
func (s *Server) Simulate(ref, action string) (SimulationResult, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return SimulationResult{}, ErrClosed
	}
	var t *transaction
	switch action {
	case ActionPay:
		t = s.byProc[ref]
	case ActionReceive, ActionRefund:
		if t = s.txs[ref]; t != nil && t.flowType != flowCashout {
			t = nil
		}
	}
	if t == nil {
		s.mu.Unlock()
		return SimulationResult{}, ErrNotFound
	}
	if t.status != TxPending {
		st := t.status
		s.mu.Unlock()
		return SimulationResult{}, &NotPendingError{Status: st}
	}
	now := s.opts.Now().UTC().Truncate(time.Second)
	event := EventTransactionPaid
	t.status, t.success = TxPaid, true
	if action == ActionRefund {
		event = EventTransactionFailed
		t.status, t.success = TxFailed, false
	}
	t.updatedAt, t.eventUpdated = now, now
	body, err := json.Marshal(struct {
		Event       string `json:"event"`
		Transaction txJSON `json:"transaction"`
	}{event, s.wireLocked(t)})
	if err != nil { // cannot happen: strings, bools and pointers to strings
		s.mu.Unlock()
		return SimulationResult{}, fmt.Errorf("encode payment event: %w", err)
	}
	t.sent = append(t.sent, body)
	reply := SimulationResult{Result: action, TransactionID: t.id, FlowType: t.flowType, Status: t.status, Event: event}
	var h webhook
	switch {
	case s.opts.PaymentsWebhookURL == "":
		reply.Webhook = "not_configured"
	case s.faults.DropPaymentNotifications:
		reply.Webhook = "dropped"
	default:
		reply.Webhook = "queued"
		h = s.paymentWebhookLocked(t.id, event, body)
		s.wg.Add(1)
	}
	s.mu.Unlock()
	s.opts.Logf("lookupsim: transaction %s: %s, now %s (webhook %s)", t.id, action, reply.Status, reply.Webhook)
	if reply.Webhook == "queued" {
		go s.deliver(h)
	}
	return reply, nil
}

// paymentWebhookLocked is a payment event's webhook: the payments
// secret (or, under the SignPaymentsWithBatchSecret fault, the batch one).
func (s *Server) paymentWebhookLocked(txID, event string, body []byte) webhook {
	key := s.opts.PaymentsSigningSecret
	if s.faults.SignPaymentsWithBatchSecret {
		key = s.opts.SigningSecret
		if len(key) == 0 {
			key = []byte("lookupsim: not the payments secret")
		}
	}
	return webhook{
		label: "transaction " + txID, url: s.opts.PaymentsWebhookURL, event: event, body: body,
		sig: signature.Sign(key, body), payment: true, duplicates: s.faults.DuplicatePaymentDeliveries,
	}
}

// Transaction returns the current JSON of a transaction by id, as the
// gateway would render it, for tests.
func (s *Server) Transaction(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.txs[id]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(s.wireLocked(t))
	return b, err == nil
}

// PaymentEvents returns the exact bodies of the payment webhooks a
// transaction's simulations triggered (sent or dropped), in order, so
// tests and the demo can check what a receiver stored byte for byte.
func (s *Server) PaymentEvents(txID string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.txs[txID]
	if !ok {
		return nil
	}
	out := make([][]byte, len(t.sent))
	for i, b := range t.sent {
		out[i] = append([]byte(nil), b...)
	}
	return out
}
