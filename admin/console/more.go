package console

import "net/http"

// morePages are the pages beyond the pipeline's own (batches and
// deliveries): quarantine, rejected, submissions, payments, erasures.
func (c *Console) morePages() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /ui/quarantine":       c.page(c.quarantineList),
		"GET /ui/quarantine/{id}":  c.page(c.quarantineEntry),
		"GET /ui/rejected":         c.page(c.rejectedList),
		"GET /ui/rejected/{id}":    c.page(c.rejectedEntry),
		"GET /ui/submissions":      c.page(c.submissions),
		"GET /ui/submissions/{id}": c.page(c.submission),
		"GET /ui/payments":         c.page(c.payments),
		"GET /ui/erasures":         c.page(c.erasures),
		"POST /ui/erasures":        c.action(c.erase),
	}
}
