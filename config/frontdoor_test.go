package config_test

// Configuration errors that give the fix.

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

func TestDurationsAcceptWholeDays(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_RETENTION", "7d")
	t.Setenv("BATCHHOOK_EXPORT_RETENTION", "30d")
	t.Setenv("BATCHHOOK_RECORD_RETENTION", "0d")
	c := mustLoad(t)
	if c.Retention != 168*time.Hour || c.ExportRetention != 720*time.Hour || c.RecordRetention != 0 {
		t.Fatalf("got retention %v, export %v, record %v; want 168h, 720h, 0", c.Retention, c.ExportRetention, c.RecordRetention)
	}
}

func TestDurationErrorsSayUseHours(t *testing.T) {
	for _, v := range []string{"1.5d", "7d12h", "1w", "30"} {
		t.Run(v, func(t *testing.T) {
			requiredEnv(t)
			t.Setenv("BATCHHOOK_RETENTION", v)
			_, err := config.Load(config.TestSinks)
			if err == nil {
				t.Fatalf("RETENTION=%s accepted", v)
			}
			if !namesVar(err.Error(), "BATCHHOOK_RETENTION") || !strings.Contains(err.Error(), "use hours, e.g. 168h") {
				t.Fatalf("error %q does not name the variable and say use hours, e.g. 168h", err)
			}
		})
	}
}

func TestEveryValueThatDoesNotParseIsReported(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_RETENTION", "1w")
	t.Setenv("BATCHHOOK_PAGE_LIMIT", "many")
	t.Setenv("BATCHHOOK_KAFKA_TLS", "maybe")
	_, err := config.Load(config.TestSinks)
	if err == nil {
		t.Fatal("Load accepted three bad values")
	}
	for _, v := range []string{"BATCHHOOK_RETENTION", "BATCHHOOK_PAGE_LIMIT", "BATCHHOOK_KAFKA_TLS"} {
		if !namesVar(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q spans several lines", err)
	}
}

func TestLogLevelIsCaseInsensitiveAndAcceptsWarning(t *testing.T) {
	for in, want := range map[string]string{"WARNING": "warn", "warning": "warn", "Debug": "debug", "INFO": "info", "Error": "error"} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_LOG_LEVEL", in)
		if c := mustLoad(t); c.LogLevel != want {
			t.Errorf("LOG_LEVEL=%s: got %q, want %q", in, c.LogLevel, want)
		}
	}
}

func TestURLWithoutSchemeSaysAddIt(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"API_BASE_URL", "provider.example/base", "BATCHHOOK_API_BASE_URL"},
		{"API_BASE_URL", "localhost:8080", "BATCHHOOK_API_BASE_URL"},
		{"API_BASE_URL", "127.0.0.1:8081", "BATCHHOOK_API_BASE_URL"},
		{"API_BASE_URL", "127.0.0.1:8081/v1", "BATCHHOOK_API_BASE_URL"},
		{"API_BASE_URL", "[::1]:8081", "BATCHHOOK_API_BASE_URL"},
		{"HTTP_SINK_URL", "127.0.0.1:9000/hook", "BATCHHOOK_HTTP_SINK_URL"},
		{"HTTP_SINK_URL", "receiver.example/hook", "BATCHHOOK_HTTP_SINK_URL"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			requiredEnv(t)
			if tc.name == "HTTP_SINK_URL" {
				t.Setenv("BATCHHOOK_SINKS", "file,http")
				t.Setenv("BATCHHOOK_HTTP_SINK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
			}
			t.Setenv("BATCHHOOK_"+tc.name, tc.value)
			_, err := config.Load(config.TestSinks)
			if err == nil || !namesVar(err.Error(), tc.want) || !strings.Contains(err.Error(), "add http:// or https://") {
				t.Fatalf("error %v does not name %s and say add http:// or https://", err, tc.want)
			}
		})
	}
	requiredEnv(t)
	t.Setenv("BATCHHOOK_API_BASE_URL", "ftp://provider.example/base")
	if _, err := config.Load(config.TestSinks); err == nil || strings.Contains(err.Error(), "add http://") {
		t.Fatalf("a URL with another scheme: error %v should not suggest adding one", err)
	}
}

func TestAllMissingRequiredVariablesInOneMessage(t *testing.T) {
	cleanEnv(t)
	_, err := config.Load(config.TestSinks)
	if err == nil {
		t.Fatal("Load succeeded with nothing set")
	}
	for _, v := range []string{"BATCHHOOK_SIGNING_SECRET", "BATCHHOOK_SIGNING_SECRET_FILE", "BATCHHOOK_API_KEY",
		"BATCHHOOK_API_KEY_FILE", "BATCHHOOK_API_BASE_URL"} {
		if !namesVar(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
}

func warningsOf(c *config.Config, event string) map[string]string {
	out := map[string]string{}
	for _, w := range c.Warnings {
		if w.Event == event {
			out[w.Variable] = w.Message
		}
	}
	return out
}

func TestUnknownVariablesAreWarnedWithASuggestion(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_SIGNING_SECRETS", "x")     // one letter too many
	t.Setenv("BATCHHOOK_EXPORT_RETENTON", "7d")    // one letter missing
	t.Setenv("BATCHHOOK_COMPLETELY_DIFFERENT", "") // nothing near
	t.Setenv("BATCHHOOK_ADMIN_URL", "http://127.0.0.1:9090")
	t.Setenv("BATCHHOOK_GATEWAY_URL", "http://127.0.0.1:9091")
	t.Setenv("BATCHHOOK_SANDBOX_URL", "http://127.0.0.1:9091")
	got := warningsOf(mustLoad(t), "unknown_variable")
	if len(got) != 3 {
		t.Fatalf("unknown_variable warnings %v, want exactly the three unknown names", got)
	}
	for name, want := range map[string]string{"BATCHHOOK_SIGNING_SECRETS": "did you mean BATCHHOOK_SIGNING_SECRET?",
		"BATCHHOOK_EXPORT_RETENTON": "did you mean BATCHHOOK_EXPORT_RETENTION?"} {
		if !strings.Contains(got[name], want) {
			t.Errorf("%s: warning %q, want it to say %q", name, got[name], want)
		}
	}
	if msg, ok := got["BATCHHOOK_COMPLETELY_DIFFERENT"]; !ok || strings.Contains(msg, "did you mean") {
		t.Errorf("BATCHHOOK_COMPLETELY_DIFFERENT: warning %q (present %v), want one without a suggestion", msg, ok)
	}
}

func TestKnownVariablesComeFromTheDefinition(t *testing.T) {
	known := config.KnownVariables()
	for _, v := range append([]string{"BATCHHOOK_ADMIN_URL", "BATCHHOOK_GATEWAY_AUTH_VALUE_FILE", "BATCHHOOK_RETENTION",
		"BATCHHOOK_SIGNING_SECRET", "BATCHHOOK_KAFKA_PAYMENTS_TOPIC"}, config.Variables()...) {
		found := false
		for _, k := range known {
			found = found || k == v
		}
		if !found {
			t.Errorf("%s is not among the known variables", v)
		}
	}
}

func TestLimitsAboveTheProvidersAreWarned(t *testing.T) {
	requiredEnv(t)
	if got := warningsOf(mustLoad(t), "limit_above_provider"); len(got) != 0 {
		t.Fatalf("defaults warned: %v", got)
	}
	t.Setenv("BATCHHOOK_SUBMIT_PER_MINUTE", "11")
	t.Setenv("BATCHHOOK_MAX_IN_FLIGHT", "51")
	c := mustLoad(t)
	got := warningsOf(c, "limit_above_provider")
	if !strings.Contains(got["BATCHHOOK_SUBMIT_PER_MINUTE"], "11 is above the provider's 10") ||
		!strings.Contains(got["BATCHHOOK_MAX_IN_FLIGHT"], "51 is above the provider's 50") {
		t.Fatalf("warnings %v, want both limits named with the value and the provider's", got)
	}
	if a := c.AboveProviderLimits(); len(a) != 2 {
		t.Fatalf("AboveProviderLimits = %v, want both", a)
	}
}
