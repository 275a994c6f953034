package config

import (
	"fmt"
	"strings"
)

// PaymentSinks are the settings the payment delivery adds to
// the sinks. Config embeds it, so its variables carry the BATCHHOOK_
// prefix like the others. An empty value (a Config built in code) means
// the default.
type PaymentSinks struct {
	// KafkaPaymentsTopic receives the payment events on the kafka sink.
	KafkaPaymentsTopic string `split_words:"true" default:"batchhook.payments"`
	// NatsPaymentsSubject receives the payment events on the nats sink; it
	// needs a JetStream stream of its own (or one whose subjects cover it).
	NatsPaymentsSubject string `split_words:"true" default:"batchhook.payments"`
}

// ValidateKafkaPayments checks the kafka sink's payments topic.
func (c *Config) ValidateKafkaPayments() error {
	if t := c.KafkaPaymentsTopic; t != "" {
		if !kafkaTopic.MatchString(t) || t == "." || t == ".." {
			return fmt.Errorf("%s: %q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", Var("KAFKA_PAYMENTS_TOPIC"), t)
		}
		if t == c.KafkaTopic {
			return fmt.Errorf("%s: must differ from %s (payment events and results are different records)", Var("KAFKA_PAYMENTS_TOPIC"), Var("KAFKA_TOPIC"))
		}
	}
	return nil
}

// ValidateNATSPayments checks the nats sink's payments subject.
func (c *Config) ValidateNATSPayments() error {
	if s := c.NatsPaymentsSubject; s != "" {
		if strings.ContainsAny(s, "*> \t\r\n") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
			return fmt.Errorf("%s: %q must be a literal subject (no wildcards, blanks or empty tokens)", Var("NATS_PAYMENTS_SUBJECT"), s)
		}
		if s == c.NatsSubject {
			return fmt.Errorf("%s: must differ from %s (payment events and results are different messages)", Var("NATS_PAYMENTS_SUBJECT"), Var("NATS_SUBJECT"))
		}
	}
	return nil
}
