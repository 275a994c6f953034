// Package kafkasink delivers exports to a Kafka topic, each
// batch in one Kafka transaction: one record per item in export order, then
// one manifest record, all keyed by the batch id so that a batch stays in
// one partition, in order. A read_committed consumer sees a batch whole or
// not at all.
//
// The sink holds one transactional producer (franz-go's kgo) and runs its
// deliveries one at a time. The transactional id is stable across restarts
// (the daemon stores a default one in its database), so when a crash cuts
// a transaction, the next producer that initialises with that id makes the
// broker abort it, and the batch is sent again whole in a new transaction.
//
// This package is the only importer of franz-go; it knows nothing of
// batchhook's configuration or store: the daemon hands it everything
// through Options.
package kafkasink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/batchhook/batchhook/sink"
)

// Defaults of Options.
const (
	DefaultTopic = "batchhook.results"
	// DefaultPaymentsTopic receives payment events.
	DefaultPaymentsTopic = "batchhook.payments"
	DefaultTimeout       = 60 * time.Second
	DefaultDialTimeout   = 10 * time.Second
	DefaultMaxItemBytes  = 32 << 20 // the default MAX_PAGE_BYTES
	// maxTxnTimeout is Kafka's default transaction.max.timeout.ms: a
	// longer transaction timeout is refused by a broker left at defaults.
	maxTxnTimeout = 15 * time.Minute
)

// The SASL mechanisms Options.SASLMechanism accepts.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// ErrOptions: New was given options it cannot work with; the wrapped text
// names the field (never a password).
var ErrOptions = errors.New("invalid kafka sink options")

// Options is what the daemon hands the kafka sink.
type Options struct {
	// Brokers are the seed brokers, host:port each.
	Brokers []string
	// Topic receives the records ("" = DefaultTopic).
	Topic string
	// PaymentsTopic receives the payment events ("" =
	// DefaultPaymentsTopic).
	PaymentsTopic string
	// TransactionalID is the producer's transactional id. It must stay
	// the same across restarts: that is what lets the broker abort a
	// transaction a crash left open.
	TransactionalID string
	// TLS turns TLS on; CAFile, when set, holds the PEM roots that verify
	// the brokers (otherwise the system roots do).
	TLS    bool
	CAFile string
	// SASLMechanism is "", SASLPlain, SASLScramSHA256 or SASLScramSHA512;
	// SASLUser and SASLPassword are its credentials.
	SASLMechanism string
	SASLUser      string
	SASLPassword  func() []byte
	// Timeout bounds one delivery's produce and flush, and separately its
	// commit (0 = DefaultTimeout). The transaction timeout the broker
	// applies is Timeout plus 30s (at most 15m).
	Timeout time.Duration
	// DialTimeout bounds each connection attempt (0 = DefaultDialTimeout).
	DialTimeout time.Duration
	// MaxItemBytes is the longest line of results.ndjson the sink will
	// send (0 = DefaultMaxItemBytes).
	MaxItemBytes int
}

// Sink is the kafka sink. Deliver is safe for concurrent use: calls run
// one at a time, since one transactional producer has one transaction.
type Sink struct {
	mu      sync.Mutex // held for a whole delivery; guards client
	client  *kgo.Client
	opts    []kgo.Opt
	topic   string
	payment string // the payments topic
	timeout time.Duration
	maxItem int
}

var _ sink.Sink = (*Sink)(nil)

// New checks o and returns a sink. It does not connect: the client is made
// on the first delivery, so an unreachable broker shows up as retried
// deliveries, never as a start error.
func New(o Options) (*Sink, error) { return newSink(o) }

// newSink is New with client options appended (tests shorten franz-go's
// metadata and retry timers with them); no exported signature mentions
// franz-go.
func newSink(o Options, extra ...kgo.Opt) (*Sink, error) {
	if len(o.Brokers) == 0 {
		return nil, fmt.Errorf("%w: Brokers is empty", ErrOptions)
	}
	for _, b := range o.Brokers {
		if b == "" || strings.ContainsAny(b, " /@") || !strings.Contains(b, ":") {
			return nil, fmt.Errorf("%w: broker %q must be host:port", ErrOptions, b)
		}
	}
	if o.Topic == "" {
		o.Topic = DefaultTopic
	}
	if o.PaymentsTopic == "" {
		o.PaymentsTopic = DefaultPaymentsTopic
	}
	if o.TransactionalID == "" {
		return nil, fmt.Errorf("%w: TransactionalID is empty", ErrOptions)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Timeout < 0 || o.DialTimeout < 0 {
		return nil, fmt.Errorf("%w: Timeout and DialTimeout must be positive", ErrOptions)
	}
	if o.MaxItemBytes == 0 {
		o.MaxItemBytes = DefaultMaxItemBytes
	}
	if o.MaxItemBytes < 0 {
		return nil, fmt.Errorf("%w: MaxItemBytes must be positive", ErrOptions)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.DefaultProduceTopic(o.Topic),
		kgo.TransactionalID(o.TransactionalID),
		kgo.TransactionTimeout(min(o.Timeout+30*time.Second, maxTxnTimeout)),
		kgo.RecordDeliveryTimeout(o.Timeout),
		kgo.DialTimeout(o.DialTimeout),
		kgo.ClientID("batchhook"),
	}
	if o.TLS || o.CAFile != "" {
		tc, err := tlsConfig(o.CAFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech, err := saslMechanism(o)
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	opts = append(opts, extra...)
	return &Sink{opts: opts, topic: o.Topic, payment: o.PaymentsTopic, timeout: o.Timeout, maxItem: o.MaxItemBytes}, nil
}

// tlsConfig verifies the brokers against caFile's roots, or the system's
// when caFile is empty.
func tlsConfig(caFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: read CAFile: %w", ErrOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: CAFile %s holds no PEM certificate", ErrOptions, caFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

// saslMechanism returns the configured mechanism; the password is read on
// each authentication, so it never sits in the options.
func saslMechanism(o Options) (sasl.Mechanism, error) {
	if o.SASLMechanism == "" {
		if o.SASLUser != "" {
			return nil, fmt.Errorf("%w: SASLUser is set without SASLMechanism", ErrOptions)
		}
		return nil, nil
	}
	if o.SASLUser == "" || o.SASLPassword == nil || len(o.SASLPassword()) == 0 {
		return nil, fmt.Errorf("%w: SASL %s needs a user and a password", ErrOptions, o.SASLMechanism)
	}
	user, pass := o.SASLUser, o.SASLPassword
	switch o.SASLMechanism {
	case SASLPlain:
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			return plain.Auth{User: user, Pass: string(pass())}, nil
		}), nil
	case SASLScramSHA256:
		return scram.Sha256(func(context.Context) (scram.Auth, error) {
			return scram.Auth{User: user, Pass: string(pass())}, nil
		}), nil
	case SASLScramSHA512:
		return scram.Sha512(func(context.Context) (scram.Auth, error) {
			return scram.Auth{User: user, Pass: string(pass())}, nil
		}), nil
	}
	return nil, fmt.Errorf("%w: SASLMechanism %q is not %s, %s or %s", ErrOptions, o.SASLMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
}

// Name is the sink's name in BATCHHOOK_SINKS.
func (s *Sink) Name() string { return "kafka" }

// Close closes the producer; a transaction still open is left to the
// broker, which aborts it when the next producer with the same id starts
// (or at the transaction timeout). Safe to call twice.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropClient()
	return nil
}

// clientLocked returns the producer, making it on first use. kgo.NewClient
// does not dial: the first request does.
func (s *Sink) clientLocked() (*kgo.Client, error) {
	if s.client != nil {
		return s.client, nil
	}
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return nil, fmt.Errorf("make kafka client: %w", err)
	}
	s.client = cl
	return cl, nil
}

// dropClient closes the producer so that the next delivery starts a new
// one. Its initialisation bumps the producer epoch under the same
// transactional id, which makes the broker abort whatever the old one left
// open; it is the one recovery path after any failure.
func (s *Sink) dropClient() {
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}
