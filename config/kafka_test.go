package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

func TestKafkaSinkVariables(t *testing.T) {
	requiredEnv(t)
	ca, err := filepath.Abs("testdata/kafka-ca.pem") // testdata/kafka-ca.README says how it was made
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATCHHOOK_SINKS", "file,kafka")
	t.Setenv("BATCHHOOK_KAFKA_BROKERS", " k1.example:9092, k2.example:9093 ,")
	t.Setenv("BATCHHOOK_KAFKA_TRANSACTIONAL_ID", "batchhook-acct-7")
	t.Setenv("BATCHHOOK_KAFKA_TLS", "true")
	t.Setenv("BATCHHOOK_KAFKA_TLS_CA_FILE", ca)
	t.Setenv("BATCHHOOK_KAFKA_SASL_MECHANISM", "scram-sha-512")
	t.Setenv("BATCHHOOK_KAFKA_SASL_USER", "batchhook")
	t.Setenv("BATCHHOOK_KAFKA_SASL_PASSWORD_FILE", writeFile(t, "s3cret-kafka\n"))
	t.Setenv("BATCHHOOK_KAFKA_TIMEOUT", "45s")
	c := mustLoad(t)
	if got := strings.Join(c.KafkaBrokerList(), "|"); got != "k1.example:9092|k2.example:9093" {
		t.Fatalf("brokers %q", got)
	}
	if c.KafkaTopic != "batchhook.results" || c.KafkaTransactionalID != "batchhook-acct-7" || !c.KafkaTLS || c.KafkaTLSCaFile != ca ||
		c.KafkaSASLMechanism != "scram-sha-512" || c.KafkaSASLUser != "batchhook" || string(c.KafkaSASLPassword) != "s3cret-kafka" ||
		c.KafkaTimeout != 45*time.Second || strings.Join(c.SinkNames(), ",") != "file,kafka" {
		t.Fatalf("kafka config: %+v", c)
	}
}

func TestKafkaErrorsNameTheVariable(t *testing.T) {
	notPEM := writeFile(t, "not a certificate\n")
	base := map[string]string{"SINKS": "kafka", "KAFKA_BROKERS": "127.0.0.1:9092"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no brokers", map[string]string{"SINKS": "kafka"}, "BATCHHOOK_KAFKA_BROKERS"},
		{"broker without port", with("KAFKA_BROKERS", "kafka.example"), "BATCHHOOK_KAFKA_BROKERS"},
		{"broker port 0", with("KAFKA_BROKERS", "kafka.example:0"), "BATCHHOOK_KAFKA_BROKERS"},
		{"broker url", with("KAFKA_BROKERS", "kafka://u:hunter2@k:9092"), "BATCHHOOK_KAFKA_BROKERS"},
		{"topic with slash", with("KAFKA_TOPIC", "a/b"), "BATCHHOOK_KAFKA_TOPIC"},
		{"txn id with space", with("KAFKA_TRANSACTIONAL_ID", "a b"), "BATCHHOOK_KAFKA_TRANSACTIONAL_ID"},
		{"missing CA file", with("KAFKA_TLS_CA_FILE", "/nonexistent/ca.pem"), "BATCHHOOK_KAFKA_TLS_CA_FILE"},
		{"CA file not PEM", with("KAFKA_TLS_CA_FILE", notPEM), "BATCHHOOK_KAFKA_TLS_CA_FILE"},
		{"timeout 0", with("KAFKA_TIMEOUT", "0s"), "BATCHHOOK_KAFKA_TIMEOUT"},
		{"bad mechanism", with("KAFKA_SASL_MECHANISM", "gssapi", "KAFKA_SASL_USER", "u", "KAFKA_SASL_PASSWORD", "hunter2"), "BATCHHOOK_KAFKA_SASL_MECHANISM"},
		{"user without mechanism", with("KAFKA_SASL_USER", "u"), "BATCHHOOK_KAFKA_SASL_MECHANISM"},
		{"mechanism without user", with("KAFKA_SASL_MECHANISM", "plain", "KAFKA_SASL_PASSWORD", "hunter2"), "BATCHHOOK_KAFKA_SASL_USER"},
		{"mechanism without password", with("KAFKA_SASL_MECHANISM", "plain", "KAFKA_SASL_USER", "u"), "BATCHHOOK_KAFKA_SASL_PASSWORD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requiredEnv(t)
			for k, v := range tt.env {
				t.Setenv("BATCHHOOK_"+k, v)
			}
			_, err := config.Load(config.TestSinks)
			if err == nil || !namesVar(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %q quotes the password", err)
			}
		})
	}
	requiredEnv(t)
	for k, v := range base {
		t.Setenv("BATCHHOOK_"+k, v)
	}
	mustLoad(t)
}
