package receiver

import "github.com/batchhook/batchhook/store"

// Products as OnQuarantine names them (and as the metrics label them).
const (
	ProductBatch    = "batch"
	ProductPayments = store.ProductPayments
)

// productName is the name OnQuarantine gives a product tag ("" is the
// batch webhook).
func productName(product string) string {
	if product == "" {
		return ProductBatch
	}
	return product
}
