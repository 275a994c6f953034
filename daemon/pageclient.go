package daemon

import (
	"net/http"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/fetcher"
)

// pageClient is the provider client the fetcher pages with. It is built in
// one place so that BenchmarkFetchDiscard reads the simulator's pages with
// exactly the client the daemon uses, and the ratio it anchors measures
// only what batchhook adds on top of reading.
//
// Its transport keeps an idle connection for every request the workers
// can have in flight (each worker reads one page and the next ahead): the
// default keeps 2 a host, so with 4 workers about one page request in 14
// opened a new connection.
func pageClient(cfg config.Config, apiKey func() []byte, observe func(status int, url string)) (*fetcher.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = max(2*cfg.FetchWorkers, 2)
	return fetcher.NewClient(fetcher.ClientOptions{
		BaseURL: cfg.APIBaseURL, APIKey: apiKey, Limit: cfg.PageLimit,
		CursorParam: cfg.CursorParam, ResultsField: cfg.ResultsField, StatusField: cfg.StatusField,
		MaxPageBytes: cfg.MaxPageBytes, Timeout: cfg.FetchTimeout, Observe: observe,
		HTTP: &http.Client{Transport: transport},
	})
}
