package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/execsink"
	"github.com/batchhook/batchhook/sink/httpsink"
	"github.com/batchhook/batchhook/sink/kafkasink"
	"github.com/batchhook/batchhook/sink/natssink"
)

// kafkaTxnIDName names the kafka sink's default transactional id among
// the store's stable ids.
const kafkaTxnIDName = "kafka_transactional_id"

// ErrSinkConfig marks a start error that is the operator's to fix in the
// configuration or on the destination (a NATS subject without a stream):
// serve exits 2 on it, like a configuration error.
var ErrSinkConfig = errors.New("sink configuration")

// natsCheckTimeout bounds the start-up check of the nats sink: a server
// that does not answer in time only delays the start by this much.
const natsCheckTimeout = 5 * time.Second

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
		case "nats":
			s, err := buildNATSSink(cfg, log)
			if err != nil {
				return nil, err
			}
			out[name] = s
		default:
			return nil, fmt.Errorf("%s: sink %s has no builder", config.Var("SINKS"), name)
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
		Brokers: cfg.KafkaBrokerList(), Topic: cfg.KafkaTopic, PaymentsTopic: cfg.KafkaPaymentsTopic, TransactionalID: txnID,
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

// buildNATSSink makes the nats sink and runs its start-up check
// (DECISIONS 30): a reachable server without a stream for the subject
// stops the start; an unreachable one is a warning, and deliveries retry.
func buildNATSSink(cfg config.Config, log zerolog.Logger) (*natssink.Sink, error) {
	s, err := natssink.New(natssink.Options{
		URL: cfg.NatsURL, Subject: cfg.NatsSubject, PaymentsSubject: cfg.NatsPaymentsSubject, CredsFile: cfg.NatsCredsFile, Token: string(cfg.NatsToken),
		TLSCAFile: cfg.NatsTLSCaFile, CreateStream: cfg.NatsCreateStream, PublishTimeout: cfg.NatsPublishTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSinkConfig, config.Var("NATS_URL"), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsCheckTimeout)
	defer cancel()
	switch err := s.Check(ctx); {
	case errors.Is(err, natssink.ErrNoStream):
		s.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrSinkConfig, config.Var("NATS_SUBJECT"), err)
	case err != nil:
		log.Warn().Str("component", "sink").Str("sink", "nats").Str("event", "nats_unreachable").
			Str("error", err.Error()).Msg("the NATS server did not answer at start; deliveries retry until it does")
	}
	return s, nil
}
