package daemon

import (
	"fmt"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink"
)

// buildSinks returns the configured sinks other than file (which is the
// export itself), by name, for the dispatcher. httpKey returns the http
// sink's current HMAC key (reloaded on SIGHUP). Each sink package is the
// only importer of its library; this is the one place that names them.
func buildSinks(cfg config.Config, httpKey func() []byte) (map[string]sink.Sink, error) {
	_ = httpKey // for httpsink.New
	out := map[string]sink.Sink{}
	for _, name := range cfg.DeliverySinks() {
		switch name {
		case "http", "exec":
			// The merger replaces these with httpsink.New / execsink.New.
			return nil, fmt.Errorf("%s: sink %s is not built yet", config.Var("SINKS"), name)
		default:
			return nil, fmt.Errorf("%s: sink %s is not built yet", config.Var("SINKS"), name)
		}
	}
	return out, nil
}
