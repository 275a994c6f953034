package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

func TestNATSSinkConfig(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_SINKS", "file,nats")
	t.Setenv("BATCHHOOK_NATS_URL", "nats://127.0.0.1:4222")
	t.Setenv("BATCHHOOK_NATS_TOKEN_FILE", writeFile(t, "tok-123\n"))
	c := mustLoad(t)
	if got := strings.Join(c.SinkNames(), ","); got != "file,nats" {
		t.Fatalf("sinks %q", got)
	}
	if c.NatsSubject != "batchhook.results" || c.NatsPublishTimeout != 10*time.Second || c.NatsCreateStream || string(c.NatsToken) != "tok-123" {
		t.Fatalf("nats config: subject %q timeout %v create %v token read %v", c.NatsSubject, c.NatsPublishTimeout, c.NatsCreateStream, string(c.NatsToken) == "tok-123")
	}
}

func TestNATSSinkErrorsNameTheVariable(t *testing.T) {
	base := map[string]string{"SINKS": "nats", "NATS_URL": "nats://127.0.0.1:4222"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range base {
			if a != k {
				m[a] = b
			}
		}
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
		not  string
	}{
		{"without url", with("NATS_URL", ""), "BATCHHOOK_NATS_URL", ""},
		{"url with userinfo", with("NATS_URL", "nats://u:hunter2@h:4222"), "BATCHHOOK_NATS_URL", "hunter2"},
		{"url http", with("NATS_URL", "http://h:4222"), "BATCHHOOK_NATS_URL", ""},
		{"url with a token in its query", with("NATS_URL", "http://h:4222/?token=s3cr3t"), "BATCHHOOK_NATS_URL", "s3cr3t"},
		{"subject wildcard", with("NATS_SUBJECT", "a.>"), "BATCHHOOK_NATS_SUBJECT", ""},
		{"creds missing", with("NATS_CREDS_FILE", "/nonexistent/x.creds"), "BATCHHOOK_NATS_CREDS_FILE", ""},
		{"ca missing", with("NATS_TLS_CA_FILE", "/nonexistent/ca.pem"), "BATCHHOOK_NATS_TLS_CA_FILE", ""},
		{"token and file", map[string]string{"SINKS": "nats", "NATS_URL": "nats://h:1", "NATS_TOKEN": "s3cret", "NATS_TOKEN_FILE": "/etc/hostname"}, "BATCHHOOK_NATS_TOKEN", "s3cret"},
		{"token file missing", with("NATS_TOKEN_FILE", "/nonexistent/tok"), "BATCHHOOK_NATS_TOKEN_FILE", ""},
		{"timeout 0", with("NATS_PUBLISH_TIMEOUT", "0s"), "BATCHHOOK_NATS_PUBLISH_TIMEOUT", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requiredEnv(t)
			for k, v := range tt.env {
				if v != "" {
					t.Setenv("BATCHHOOK_"+k, v)
				}
			}
			_, err := config.Load(config.TestSinks)
			if err == nil || !namesVar(err.Error(), tt.want) {
				t.Fatalf("error %v does not name %s", err, tt.want)
			}
			if tt.not != "" && strings.Contains(err.Error(), tt.not) {
				t.Fatalf("error %q quotes the value", err)
			}
		})
	}
}
