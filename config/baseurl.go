package config

import (
	"net/url"
	"strings"
)

// baseURLWarning returns a Warning when API_BASE_URL already ends in the
// version prefix: batchhook appends /api/v1/batches itself, so such a base
// asks for /api/v1/api/v1/batches, which the provider answers 404 for every
// batch (retried for NOT_FOUND_GRACE, then abandoned). It is a warning, not
// an error: a provider could, in principle, mount its API under a path
// that ends so.
func baseURLWarning(raw string) *Warning {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(strings.ToLower(p), "/api/v1") {
		return nil
	}
	u.Path = p[:len(p)-len("/api/v1")]
	return &Warning{Event: "api_base_url_suspect", Variable: Var("API_BASE_URL"),
		Message: "the base URL ends in /api/v1 and batchhook appends /api/v1/batches itself, so it will ask for " +
			strings.TrimRight(raw, "/") + "/api/v1/batches/{id}; set " + Var("API_BASE_URL") + "=" + u.String() + " unless the provider really serves that path"}
}
