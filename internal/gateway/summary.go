package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/batchhook/batchhook/cpf"
)

// Summary is what a table shows of a gateway reply's transaction (2.4),
// with the personal fields already masked: names to their first letter,
// the e-mail to its first letter and domain, the document number as
// cpf.Mask does. It never holds the clear values.
type Summary struct {
	ID                     string
	MerchantTransactionID  string
	Type, Flow, Status     string
	Amount                 string
	CreatedAt              string
	QRCode                 string // the simulation URL
	ProcessorTransactionID string // deposits
	Name, Email, Document  string // masked
}

// Summarize reads the {"transaction":{…}} reply. Fields the reply lacks
// stay empty; a reply without a transaction object is an error.
func Summarize(reply []byte) (Summary, error) {
	var r struct {
		Transaction *struct {
			ID                    string  `json:"id"`
			MerchantTransactionID string  `json:"merchant_transaction_id"`
			TransactionType       string  `json:"transaction_type"`
			FlowType              string  `json:"flow_type"`
			Status                string  `json:"status"`
			CreatedAt             string  `json:"created_at"`
			FirstName             string  `json:"first_name"`
			LastName              string  `json:"last_name"`
			Email                 *string `json:"email"`
			DocumentNumber        string  `json:"document_number"`
			Events                []struct {
				Amount                 string `json:"amount"`
				QRCode                 string `json:"qrcode"`
				ProcessorTransactionID string `json:"processor_transaction_id"`
			} `json:"events"`
		} `json:"transaction"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		return Summary{}, fmt.Errorf("decode the gateway's reply: not the JSON of a transaction")
	}
	t := r.Transaction
	if t == nil {
		return Summary{}, fmt.Errorf("decode the gateway's reply: no transaction in it")
	}
	s := Summary{
		ID: t.ID, MerchantTransactionID: t.MerchantTransactionID, Type: t.TransactionType, Flow: t.FlowType,
		Status: t.Status, CreatedAt: t.CreatedAt,
		Name:     strings.TrimSpace(MaskName(t.FirstName) + " " + MaskName(t.LastName)),
		Document: cpf.Mask(t.DocumentNumber),
	}
	if t.Email != nil {
		s.Email = MaskEmail(*t.Email)
	}
	for _, e := range t.Events {
		s.Amount, s.QRCode = firstOf(s.Amount, e.Amount), firstOf(s.QRCode, e.QRCode)
		s.ProcessorTransactionID = firstOf(s.ProcessorTransactionID, e.ProcessorTransactionID)
	}
	return s, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// MaskName keeps a name's first letter: "João" → "J.".
func MaskName(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	r, _ := utf8.DecodeRuneInString(s)
	return string(r) + "."
}

// MaskEmail keeps the first letter of the local part and the domain:
// "joao@example.com" → "j***@example.com". Anything else is masked whole.
func MaskEmail(s string) string {
	local, domain, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || local == "" || domain == "" {
		if s == "" {
			return ""
		}
		return "***"
	}
	r, _ := utf8.DecodeRuneInString(local)
	return string(r) + "***@" + domain
}
