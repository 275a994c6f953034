package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/batchhook/batchhook/cpf"
)

// batchID returns the provider-like id made of r: "b_" and 20 hex digits,
// as the simulator makes them.
func batchID(r [10]byte) string { return "b_" + hex.EncodeToString(r[:]) }

// completedBody is a batch.completed body as the provider signs it
// (docs/provider-api.md §2.1; lookupsim makes the same): compact JSON,
// stored by the daemon byte for byte.
func completedBody(id string, found, notFound int64, completed time.Time) []byte {
	b := make([]byte, 0, 200)
	b = append(b, `{"event":"batch.completed","batch_id":"`...)
	b = append(b, id...)
	b = append(b, `","status":"completed","total_requested":`...)
	b = strconv.AppendInt(b, found+notFound, 10)
	b = append(b, `,"total_found":`...)
	b = strconv.AppendInt(b, found, 10)
	b = append(b, `,"total_not_found":`...)
	b = strconv.AppendInt(b, notFound, 10)
	b = append(b, `,"completed_at":"`...)
	b = completed.UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
	return append(b, `"}`...)
}

// hexOf returns n hex digits made of r (n at most 16).
func hexOf(r uint64, n int) string {
	s := strconv.FormatUint(r|1<<63, 16)
	return s[len(s)-n:]
}

// uuidOf renders two random words as a version 4 UUID.
func uuidOf(a, b uint64) string {
	a = a&^0xf000 | 0x4000
	b = b&^(3<<62) | 2<<62
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// cpfOf returns a valid CPF's 11 digits made of r.
func cpfOf(r uint64) string {
	base := fmt.Sprintf("%09d", r%1_000_000_000)
	return base + cpf.CheckDigits(base)
}

var (
	firstNames = []string{"Ana", "Bruno", "Carla", "Diego", "Elisa", "Felipe", "Gabriela", "Heitor", "Isabela", "João", "Larissa", "Marcos"}
	lastNames  = []string{"Silva", "Santos", "Oliveira", "Souza", "Lima", "Pereira", "Costa", "Almeida", "Ferreira", "Rodrigues"}
)

// paymentEvent is one payments webhook of the log: its X-Service-Event,
// transaction id, body and dedup key. The body is shaped like the
// simulator's (docs/provider-api.md §2.4: {"event":…,"transaction":{…}}),
// with a person's name, CPF, e-mail and pix key: the personal data the
// purger drops after RECORD_RETENTION. The dedup key is the one the
// default BATCHHOOK_PAYMENTS_DEDUP_FIELDS make (transaction.id, status,
// updated_at).
func paymentEvent(seed uint64, j int, at time.Time) (event, txID string, body []byte, dedup string) {
	r1, r2, r3 := mix(seed^0x9a7, uint64(3*j)), mix(seed^0x9a7, uint64(3*j+1)), mix(seed^0x9a7, uint64(3*j+2))
	txID = uuidOf(r1, r2)
	event, status := "transaction.paid", "paid"
	if r3%20 == 0 {
		event, status = "transaction.failed", "failed"
	}
	flow := "deposit"
	if r3%3 == 0 {
		flow = "withdrawal"
	}
	first, last := firstNames[r1%uint64(len(firstNames))], lastNames[r2%uint64(len(lastNames))]
	doc := cpfOf(r3 >> 8)
	created := at.Add(-time.Duration(30+r3%300) * time.Second).UTC().Format("2006-01-02T15:04:05-0700")
	updated := at.UTC().Format("2006-01-02T15:04:05-0700")
	amount := fmt.Sprintf("%d.%02d", 10+r2%5000, r1%100)
	body = fmt.Appendf(nil, `{"event":%q,"transaction":{"id":%q,"merchant_id":"m_4f1c9e","user_id":"u_%s","processor_id":"p_%s",`+
		`"merchant_transaction_id":"mt_%s","transaction_type":"pix","first_name":%q,"last_name":%q,"email":"%s.%s%d@example.com",`+
		`"document_number":%q,"status":%q,"flow_type":%q,"error":null,"e2e_id":"E%s","source":"player","created_at":%q,"updated_at":%q,`+
		`"events":[{"id":"ev_%s","success":%t,"event_type":%q,"amount":%q,"ip_address":null,"batch_id":null,"qrcode":"","qrcode_image":"",`+
		`"pix_key_type":"cpf","pix_key_value":%q,"pix_message":"","created_at":%q,"updated_at":%q}]}}`,
		event, txID, hexOf(r1, 12), hexOf(r2, 12), hexOf(r3, 12), first, last, first, last, r3%100, doc, status, flow,
		hexOf(r2^r3, 16), created, updated, hexOf(r1^r3, 12), status == "paid", flow, amount, doc, created, updated)
	dedup = fmt.Sprintf(`fields:[%q,%q,%q]`, txID, status, updated)
	return event, txID, body, dedup
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
