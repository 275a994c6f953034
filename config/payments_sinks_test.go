package config_test

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

func TestPaymentSinksConfig(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_SINKS", "exec,file,nats,kafka")
	t.Setenv("BATCHHOOK_EXEC_SINK_COMMAND", `["/bin/true"]`)
	t.Setenv("BATCHHOOK_NATS_URL", "nats://127.0.0.1:4222")
	t.Setenv("BATCHHOOK_KAFKA_BROKERS", "127.0.0.1:9092")
	c := mustLoad(t)
	if got := strings.Join(c.SinkNames(), ","); got != "exec,file,nats,kafka" {
		t.Fatalf("sinks %q", got)
	}
	if c.KafkaPaymentsTopic != "batchhook.payments" || c.NatsPaymentsSubject != "batchhook.payments" {
		t.Fatalf("defaults: topic %q subject %q", c.KafkaPaymentsTopic, c.NatsPaymentsSubject)
	}
	t.Setenv("BATCHHOOK_KAFKA_PAYMENTS_TOPIC", "acme.pay")
	t.Setenv("BATCHHOOK_NATS_PAYMENTS_SUBJECT", "acme.pay.events")
	c = mustLoad(t)
	if c.KafkaPaymentsTopic != "acme.pay" || c.NatsPaymentsSubject != "acme.pay.events" {
		t.Fatalf("set: topic %q subject %q", c.KafkaPaymentsTopic, c.NatsPaymentsSubject)
	}
}

func TestPaymentSinksErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"kafka topic with a space", map[string]string{"SINKS": "kafka", "KAFKA_BROKERS": "h:9092", "KAFKA_PAYMENTS_TOPIC": "a b"}, "BATCHHOOK_KAFKA_PAYMENTS_TOPIC"},
		{"kafka topic the results'", map[string]string{"SINKS": "kafka", "KAFKA_BROKERS": "h:9092", "KAFKA_PAYMENTS_TOPIC": "batchhook.results"}, "BATCHHOOK_KAFKA_PAYMENTS_TOPIC"},
		{"nats wildcard", map[string]string{"SINKS": "nats", "NATS_URL": "nats://h:4222", "NATS_PAYMENTS_SUBJECT": "pay.>"}, "BATCHHOOK_NATS_PAYMENTS_SUBJECT"},
		{"nats subject the results'", map[string]string{"SINKS": "nats", "NATS_URL": "nats://h:4222", "NATS_PAYMENTS_SUBJECT": "batchhook.results"}, "BATCHHOOK_NATS_PAYMENTS_SUBJECT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requiredEnv(t)
			for k, v := range tt.env {
				t.Setenv("BATCHHOOK_"+k, v)
			}
			_, err := config.Load(config.TestSinks)
			if err == nil || !namesVar(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
		})
	}
}
