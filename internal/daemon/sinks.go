package daemon

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/execsink"
	"github.com/batchhook/batchhook/sink/httpsink"
	"github.com/batchhook/batchhook/sink/kafkasink"
)

// kafkaTxnIDName names the kafka sink's default transactional id among
// the store's stable ids.
const kafkaTxnIDName = "kafka_transactional_id"

// buildSinks returns the configured sinks other than file (which is the
// export itself), by name, for the dispatcher. httpKey returns the http
// sink's current HMAC key (reloaded on SIGHUP); stableID returns a value
// kept in the database for the life of the data directory (the kafka
// sink's default transactional id). Each sink package is the only importer
// of its library; this is the one place that names them. An error names
// the variable at fault, for the one-line exit 2.
func buildSinks(cfg config.Config, httpKey func() []byte, stableID func(string) (string, error), log zerolog.Logger) (map[string]sink.Sink, error) {
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
		case "kafka":
			s, err := buildKafkaSink(cfg, stableID)
			if err != nil {
				return nil, err
			}
			out[name] = s
		default:
			return nil, fmt.Errorf("%s: sink %s is not built yet", config.Var("SINKS"), name)
		}
	}
	return out, nil
}

// buildKafkaSink makes the kafka sink; it does not connect (an unreachable
// broker never stops the start: its deliveries wait and retry).
func buildKafkaSink(cfg config.Config, stableID func(string) (string, error)) (*kafkasink.Sink, error) {
	txnID := cfg.KafkaTransactionalID
	if txnID == "" {
		id, err := stableID(kafkaTxnIDName)
		if err != nil {
			return nil, fmt.Errorf("%s: make the default: %w", config.Var("KAFKA_TRANSACTIONAL_ID"), err)
		}
		txnID = id
	}
	pass := cfg.KafkaSASLPassword
	s, err := kafkasink.New(kafkasink.Options{
		Brokers: cfg.KafkaBrokerList(), Topic: cfg.KafkaTopic, TransactionalID: txnID,
		TLS: cfg.KafkaTLS, CAFile: cfg.KafkaTLSCaFile,
		SASLMechanism: cfg.KafkaSASLMechanism, SASLUser: cfg.KafkaSASLUser, SASLPassword: func() []byte { return pass },
		Timeout: cfg.KafkaTimeout, MaxItemBytes: int(cfg.MaxPageBytes),
	})
	if err != nil {
		v := config.Var("KAFKA_BROKERS")
		if cfg.KafkaTLSCaFile != "" && strings.Contains(err.Error(), "CAFile") {
			v = config.Var("KAFKA_TLS_CA_FILE")
		}
		return nil, fmt.Errorf("%s: %w", v, err)
	}
	return s, nil
}
