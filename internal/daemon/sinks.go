package daemon

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/execsink"
	"github.com/batchhook/batchhook/sink/httpsink"
)

// buildSinks returns the configured sinks other than file (which is the
// export itself), by name, for the dispatcher. httpKey returns the http
// sink's current HMAC key (reloaded on SIGHUP). Each sink package is the
// only importer of its library; this is the one place that names them.
// An error names the variable at fault, for the one-line exit 2.
func buildSinks(cfg config.Config, httpKey func() []byte, log zerolog.Logger) (map[string]sink.Sink, error) {
	out := map[string]sink.Sink{}
	for _, name := range cfg.DeliverySinks() {
		switch name {
		case "http":
			s, err := httpsink.New(httpsink.Options{
				URL: cfg.HTTPSinkURL, Key: httpKey, MaxItems: cfg.HTTPSinkMaxItems,
				Timeout: cfg.HTTPSinkTimeout, MaxItemBytes: int(cfg.MaxPageBytes),
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", config.Var("HTTP_SINK_URL"), err)
			}
			out[name] = s
		case "exec":
			s, err := execsink.New(execsink.Options{
				Command: cfg.ExecSinkArgv(), Timeout: cfg.ExecSinkTimeout, LogOutput: cfg.ExecSinkLogOutput,
				Logger: log.With().Str("component", "sink").Str("sink", "exec").Logger(),
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", config.Var("EXEC_SINK_COMMAND"), err)
			}
			out[name] = s
		default:
			return nil, fmt.Errorf("%s: sink %s is not built yet", config.Var("SINKS"), name)
		}
	}
	return out, nil
}
