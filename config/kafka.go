package config

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// KafkaSASLMechanisms are the values BATCHHOOK_KAFKA_SASL_MECHANISM
// accepts.
var KafkaSASLMechanisms = []string{"plain", "scram-sha-256", "scram-sha-512"}

// maxCAFileBytes caps BATCHHOOK_KAFKA_TLS_CA_FILE: a bundle of roots is a
// few hundred KiB at most.
const maxCAFileBytes = 4 << 20

// kafkaTopic is Kafka's own rule for a topic name.
var kafkaTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// KafkaBrokerList returns BATCHHOOK_KAFKA_BROKERS split on commas, without
// blanks (Validate has checked each is host:port).
func (c *Config) KafkaBrokerList() []string {
	var out []string
	for _, b := range strings.Split(c.KafkaBrokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// ValidateKafkaSink checks the kafka sink's variables; the error names the
// variable and never shows the password.
func (c *Config) ValidateKafkaSink() error {
	brokers := c.KafkaBrokerList()
	if len(brokers) == 0 {
		return fmt.Errorf("%s: required when %s includes kafka (a comma list of host:port)", Var("KAFKA_BROKERS"), Var("SINKS"))
	}
	for i, b := range brokers {
		host, port, err := net.SplitHostPort(b)
		if p, perr := strconv.Atoi(port); err != nil || host == "" || strings.ContainsAny(host, "/@ ") || perr != nil || p < 1 || p > 65535 {
			// The value is not shown: a URL with credentials would leak.
			return fmt.Errorf("%s: entry %d is not host:port (no scheme, no user)", Var("KAFKA_BROKERS"), i+1)
		}
	}
	if !kafkaTopic.MatchString(c.KafkaTopic) || c.KafkaTopic == "." || c.KafkaTopic == ".." {
		return fmt.Errorf("%s: %q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", Var("KAFKA_TOPIC"), c.KafkaTopic)
	}
	if id := c.KafkaTransactionalID; len(id) > 249 || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("%s: must be at most 249 characters, without spaces or control characters", Var("KAFKA_TRANSACTIONAL_ID"))
	}
	if f := c.KafkaTLSCaFile; f != "" {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() || st.Size() > maxCAFileBytes {
			return fmt.Errorf("%s: %s is not a readable file of at most %d bytes", Var("KAFKA_TLS_CA_FILE"), f, maxCAFileBytes)
		}
		pem, err := os.ReadFile(f)
		if err != nil || !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: %s holds no PEM certificate", Var("KAFKA_TLS_CA_FILE"), f)
		}
	}
	if c.KafkaTimeout <= 0 {
		return fmt.Errorf("%s: must be positive", Var("KAFKA_TIMEOUT"))
	}
	if c.KafkaSASLMechanism == "" {
		if c.KafkaSASLUser != "" || len(c.KafkaSASLPassword) > 0 {
			return fmt.Errorf("%s: required when %s or a password is set (%s)", Var("KAFKA_SASL_MECHANISM"), Var("KAFKA_SASL_USER"), strings.Join(KafkaSASLMechanisms, ", "))
		}
		return nil
	}
	if !slices.Contains(KafkaSASLMechanisms, c.KafkaSASLMechanism) {
		return fmt.Errorf("%s: %q is not one of %s", Var("KAFKA_SASL_MECHANISM"), c.KafkaSASLMechanism, strings.Join(KafkaSASLMechanisms, ", "))
	}
	if c.KafkaSASLUser == "" {
		return fmt.Errorf("%s: required with %s", Var("KAFKA_SASL_USER"), Var("KAFKA_SASL_MECHANISM"))
	}
	if len(c.KafkaSASLPassword) == 0 {
		return fmt.Errorf("%s or %s: required with %s", Var("KAFKA_SASL_PASSWORD"), Var("KAFKA_SASL_PASSWORD_FILE"), Var("KAFKA_SASL_MECHANISM"))
	}
	return nil
}
