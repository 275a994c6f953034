package daemon

import (
	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/fetcher"
)

// pageClient is the provider client the fetcher pages with. It is built in
// one place so that BenchmarkFetchDiscard reads the simulator's pages with
// exactly the client the daemon uses, and the ratio it anchors measures
// only what batchhook adds on top of reading.
func pageClient(cfg config.Config, apiKey func() []byte, observe func(status int, url string)) (*fetcher.Client, error) {
	return fetcher.NewClient(fetcher.ClientOptions{
		BaseURL: cfg.APIBaseURL, APIKey: apiKey, Limit: cfg.PageLimit,
		CursorParam: cfg.CursorParam, ResultsField: cfg.ResultsField, StatusField: cfg.StatusField,
		MaxPageBytes: cfg.MaxPageBytes, Timeout: cfg.FetchTimeout, Observe: observe,
	})
}
