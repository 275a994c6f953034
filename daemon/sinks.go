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

// kafkaCheckTimeout bounds the start-up check of the kafka sink's brokers
// the same way: long enough for a broker on another host to answer, short
// enough not to hold the start up.
const kafkaCheckTimeout = 5 * time.Second

// sinkKind is one sink batchhook can deliver to. sinkKinds is the
// registry: config's validation (SinkRules), the daemon's wiring, the
// store's outboxes, the metrics' labels and the payment delivery all read
// it, so a new sink is its package below sink/, its variables in config,
// and one line here.
type sinkKind struct {
	// Name is the sink's name in BATCHHOOK_SINKS, in the store's outboxes,
	// in metric labels and in the admin API.
	Name string
	// Check and CheckPayments validate the sink's variables (config's
	// rules, see config.SinkRule); nil when it has none.
	Check, CheckPayments func(*config.Config) error
	// Payments: the sink also takes payment events. The built sink must
	// then be a sink.PaymentSink.
	Payments bool
	// New builds the sink; nil for file, which is the export directory
	// itself (no outbox: the fetcher's publish is its delivery), and whose
	// payment sink is the day files below it (paymentDispatcher).
	New func(cfg config.Config, env sinkEnv) (sink.Sink, error)
	// StartPayments checks, at start, that the sink can take payment
	// events; nil when there is nothing to check.
	StartPayments func(d *Daemon, s sink.PaymentSink) error
}

// sinkEnv is what a sink's constructor may need beyond the configuration.
type sinkEnv struct {
	// httpKey returns the http sink's current HMAC key (reloaded on SIGHUP).
	httpKey func() []byte
	// stableID returns a value kept in the database for the life of the
	// data directory (the kafka sink's default transactional id).
	stableID func(string) (string, error)
	log      zerolog.Logger
}

// sinkKinds are the sinks, in the order their variables are checked.
var sinkKinds = []sinkKind{
	{Name: "file", Payments: true},
	{Name: "http", Check: (*config.Config).ValidateHTTPSink, Payments: true, New: newHTTPSink},
	{Name: "exec", Check: (*config.Config).ValidateExecSink, New: newExecSink},
	{Name: "kafka", Check: (*config.Config).ValidateKafkaSink, CheckPayments: (*config.Config).ValidateKafkaPayments,
		Payments: true, New: newKafkaSink},
	{Name: "nats", Check: (*config.Config).ValidateNATSSink, CheckPayments: (*config.Config).ValidateNATSPayments,
		Payments: true, New: newNATSSink, StartPayments: checkNATSPayments},
}

// SinkRules are the sinks as config's Load and Validate check them.
func SinkRules() []config.SinkRule {
	out := make([]config.SinkRule, len(sinkKinds))
	for i, k := range sinkKinds {
		out[i] = config.SinkRule{Name: k.Name, Check: k.Check, CheckPayments: k.CheckPayments}
	}
	return out
}

// DeliverySinkNames are the sinks a batch's export can be delivered (and
// redelivered) to: every sink but file, which is the export itself.
func DeliverySinkNames() []string {
	var out []string
	for _, k := range sinkKinds {
		if k.New != nil {
			out = append(out, k.Name)
		}
	}
	return out
}

// kindOf returns the registry entry of a sink name Validate accepted.
func kindOf(name string) (sinkKind, bool) {
	for _, k := range sinkKinds {
		if k.Name == name {
			return k, true
		}
	}
	return sinkKind{}, false
}

// configuredSinks returns the configured sinks (BATCHHOOK_SINKS, in its
// order) for which keep is true.
func configuredSinks(cfg config.Config, keep func(sinkKind) bool) []string {
	var out []string
	for _, name := range cfg.SinkNames() {
		if k, ok := kindOf(name); ok && keep(k) {
			out = append(out, name)
		}
	}
	return out
}

// deliverySinks returns the configured sinks other than file: the ones
// with an outbox in the store, a builder and metrics of their own.
func deliverySinks(cfg config.Config) []string {
	return configuredSinks(cfg, func(k sinkKind) bool { return k.New != nil })
}

// keepExports reports whether file is a configured sink: otherwise an
// export is removed once every sink has delivered it.
func keepExports(cfg config.Config) bool {
	return len(configuredSinks(cfg, func(k sinkKind) bool { return k.New == nil })) > 0
}

// paymentSinks returns the configured sinks that take payment events.
func paymentSinks(cfg config.Config) []string {
	return configuredSinks(cfg, func(k sinkKind) bool { return k.Payments })
}

// buildSinks returns the configured sinks other than file (which is the
// export itself), by name, for the dispatcher. Each sink package is the
// only importer of its library; the registry is the one place that names
// them. An error names the variable at fault, for the one-line exit 2.
func buildSinks(cfg config.Config, httpKey func() []byte, stableID func(string) (string, error), log zerolog.Logger) (map[string]sink.Sink, error) {
	env := sinkEnv{httpKey: httpKey, stableID: stableID, log: log}
	out := map[string]sink.Sink{}
	for _, name := range deliverySinks(cfg) {
		k, _ := kindOf(name)
		s, err := k.New(cfg, env)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

// newHTTPSink makes the http sink.
func newHTTPSink(cfg config.Config, env sinkEnv) (sink.Sink, error) {
	s, err := httpsink.New(httpsink.Options{
		URL: cfg.HTTPSinkURL, Key: env.httpKey, MaxItems: cfg.HTTPSinkMaxItems,
		Timeout: cfg.HTTPSinkTimeout, MaxItemBytes: int(cfg.MaxPageBytes),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.Var("HTTP_SINK_URL"), err)
	}
	return s, nil
}

// newExecSink makes the exec sink.
func newExecSink(cfg config.Config, env sinkEnv) (sink.Sink, error) {
	s, err := execsink.New(execsink.Options{
		Command: cfg.ExecSinkArgv(), Timeout: cfg.ExecSinkTimeout, LogOutput: cfg.ExecSinkLogOutput,
		Logger: env.log.With().Str("component", "sink").Str("sink", "exec").Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.Var("EXEC_SINK_COMMAND"), err)
	}
	return s, nil
}

// newKafkaSink makes the kafka sink; it does not connect (an unreachable
// broker never stops the start: its deliveries wait and retry).
func newKafkaSink(cfg config.Config, env sinkEnv) (sink.Sink, error) {
	txnID := cfg.KafkaTransactionalID
	if txnID == "" {
		id, err := env.stableID(kafkaTxnIDName)
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
	// Only a warning, like nats_unreachable: a broker that is down at start
	// may be up by the first delivery, which retries anyway.
	ctx, cancel := context.WithTimeout(context.Background(), kafkaCheckTimeout)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		env.log.Warn().Str("component", "sink").Str("sink", "kafka").Str("event", "kafka_unreachable").
			Str("error", err.Error()).Msg("no Kafka broker answered at start; deliveries retry until one does")
	}
	return s, nil
}

// newNATSSink makes the nats sink and runs its start-up check
// (DECISIONS 30): a reachable server without a stream for the subject
// stops the start; an unreachable one is a warning, and deliveries retry.
func newNATSSink(cfg config.Config, env sinkEnv) (sink.Sink, error) {
	log := env.log
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
