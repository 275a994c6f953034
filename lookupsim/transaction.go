package lookupsim

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"time"
)

// Transaction statuses. The document shows only pending (on creation);
// paid and failed are our assumption for the two simulated outcomes.
const (
	TxPending = "pending"
	TxPaid    = "paid"
	TxFailed  = "failed"
)

// Payment webhook event names: docs/provider-api.md does not show them.
const (
	EventTransactionPaid   = "transaction.paid"
	EventTransactionFailed = "transaction.failed"
)

// timestampLayout is the `YYYY-MM-DDThh:mm:ss+0000` form of docs/provider-api.md §2.4.
const timestampLayout = "2006-01-02T15:04:05-0700"

// transaction is one deposit or withdrawal, held in memory until the
// Server's Retention has passed since its last change. Its JSON is
// rendered by txJSON under the Server's lock.
type transaction struct {
	id, userID, processorID, merchantTxID string
	firstName, lastName                   string
	email                                 *string // null on a withdrawal: its request has none
	documentNumber                        string
	status, flowType                      string
	createdAt, updatedAt                  time.Time

	// The one event of the transaction (docs/provider-api.md §2.4).
	eventID, eventType         string
	success                    bool
	amount                     string // two decimal places
	ipAddress                  *string
	processorTxID              string // deposits only: the id /pay takes
	qrcode                     string
	pixKeyType, pixKey         *string // withdrawals only
	pixMessage                 string
	eventCreated, eventUpdated time.Time

	sent [][]byte // the payment webhook bodies triggered, in order
}

// txJSON is the wire form of a transaction, members in the order of
// docs/provider-api.md §2.4. Pointers render null.
type txJSON struct {
	ID                    string        `json:"id"`
	MerchantID            string        `json:"merchant_id"`
	UserID                string        `json:"user_id"`
	ProcessorID           string        `json:"processor_id"`
	MerchantTransactionID string        `json:"merchant_transaction_id"`
	TransactionType       string        `json:"transaction_type"`
	FirstName             string        `json:"first_name"`
	LastName              string        `json:"last_name"`
	Email                 *string       `json:"email"`
	DocumentNumber        string        `json:"document_number"`
	Status                string        `json:"status"`
	FlowType              string        `json:"flow_type"`
	Error                 *string       `json:"error"`
	E2EID                 *string       `json:"e2e_id"`
	Source                string        `json:"source"`
	CreatedAt             string        `json:"created_at"`
	UpdatedAt             string        `json:"updated_at"`
	Events                []txEventJSON `json:"events"`
}

// txEventJSON is one transaction event. processor_transaction_id is left
// out of a withdrawal's event: docs/provider-api.md §2.4 shows it on the deposit only.
type txEventJSON struct {
	ID                     string  `json:"id"`
	Success                bool    `json:"success"`
	EventType              string  `json:"event_type"`
	Amount                 string  `json:"amount"`
	IPAddress              *string `json:"ip_address"`
	ProcessorTransactionID string  `json:"processor_transaction_id,omitempty"`
	BatchID                *string `json:"batch_id"`
	QRCode                 string  `json:"qrcode"`
	QRCodeImage            string  `json:"qrcode_image"`
	PixKeyType             *string `json:"pix_key_type"`
	PixKeyValue            *string `json:"pix_key_value"`
	PixMessage             string  `json:"pix_message"`
	CreatedAt              string  `json:"created_at"`
	UpdatedAt              string  `json:"updated_at"`
}

// wireLocked renders t with the Server's merchant id and QR image.
func (s *Server) wireLocked(t *transaction) txJSON {
	return txJSON{
		ID: t.id, MerchantID: s.merchant, UserID: t.userID, ProcessorID: t.processorID,
		MerchantTransactionID: t.merchantTxID, TransactionType: "pix",
		FirstName: t.firstName, LastName: t.lastName, Email: t.email, DocumentNumber: t.documentNumber,
		Status: t.status, FlowType: t.flowType, Source: "player",
		CreatedAt: stamp(t.createdAt), UpdatedAt: stamp(t.updatedAt),
		Events: []txEventJSON{{
			ID: t.eventID, Success: t.success, EventType: t.eventType, Amount: t.amount,
			IPAddress: t.ipAddress, ProcessorTransactionID: t.processorTxID,
			QRCode: t.qrcode, QRCodeImage: s.qrImage,
			PixKeyType: t.pixKeyType, PixKeyValue: t.pixKey, PixMessage: t.pixMessage,
			CreatedAt: stamp(t.eventCreated), UpdatedAt: stamp(t.eventUpdated),
		}},
	}
}

// stamp renders t in the form of docs/provider-api.md §2.4, in UTC.
func stamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// newUUID returns a random (version 4, RFC 9562) UUID from crypto/rand.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand contract)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// qrcodeDataURI renders a small, valid PNG (a 21×21 QR-like pattern: the
// sandbox's codes are not payable, docs/provider-api.md says) as a data URI.
func qrcodeDataURI() string {
	const n = 21
	img := image.NewGray(image.Rect(0, 0, n, n))
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			c := color.Gray{Y: 255}
			if finder(x, y) || finder(n-1-x, y) || finder(x, n-1-y) || (x+y)%3 == 0 && x > 7 && y > 7 {
				c.Y = 0
			}
			img.SetGray(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil { // cannot fail on an in-memory image
		panic(fmt.Sprintf("lookupsim: encode qrcode png: %v", err))
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// finder says whether (x, y) is dark in a QR finder square at the origin.
func finder(x, y int) bool {
	if x > 6 || y > 6 {
		return false
	}
	return x == 0 || y == 0 || x == 6 || y == 6 || (x >= 2 && x <= 4 && y >= 2 && y <= 4)
}
