package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

// Values of the required settings. They must never appear in an error.
const (
	reqSecret = "sig-S3cr3t-value"
	reqKey    = "api-K3y-value"
	reqURL    = "https://provider.example:8443/base"
)

// shortNames is every variable batchhook reads, without the prefix.
var shortNames = []string{
	"LISTEN_ADDR", "WEBHOOK_PATH", "SIGNING_SECRET", "SIGNING_SECRET_FILE",
	"API_BASE_URL", "API_KEY", "API_KEY_FILE", "DATA_DIR", "EXPORT_DIR",
	"PAGE_LIMIT", "CURSOR_PARAM", "RESULTS_FIELD", "FETCH_WORKERS", "RETENTION",
	"FETCH_TIMEOUT", "BACKOFF_BASE", "BACKOFF_MAX", "NOT_FOUND_GRACE",
	"EXPORT_RETENTION", "RECORD_RETENTION", "PURGE_INTERVAL",
	"MAX_BODY_BYTES", "MAX_PAGE_BYTES", "LOG_LEVEL", "LOG_FORMAT",
	"ADMIN_ADDR", "ADMIN_TOKEN", "ADMIN_TOKEN_FILE", "CONSOLE", "CONSOLE_SESSION", "CONSOLE_HOSTS",
	"SUBMIT_PER_MINUTE", "MAX_IN_FLIGHT", "RECONCILE_AFTER", "STATUS_FIELD",
	"MAX_SUBMISSION_BYTES", "RESUBMIT_FIELD", "RESUBMIT_VALUES", "ITEM_CPF_FIELD",
	"REPAIR_PERMISSIONS",
	"MAX_CONNECTIONS", "MEMORY_LIMIT", "TRUSTED_PROXIES", "REJECTED_KEEP", "PPROF_ADDR",
	"SINKS", "SINK_WORKERS", "HTTP_SINK_URL", "HTTP_SINK_SECRET", "HTTP_SINK_SECRET_FILE", "HTTP_SINK_MAX_ITEMS",
	"HTTP_SINK_TIMEOUT", "EXEC_SINK_COMMAND", "EXEC_SINK_TIMEOUT", "EXEC_SINK_LOG_OUTPUT",
	"KAFKA_BROKERS", "KAFKA_TOPIC", "KAFKA_TRANSACTIONAL_ID", "KAFKA_TLS", "KAFKA_TLS_CA_FILE", "KAFKA_SASL_MECHANISM",
	"KAFKA_SASL_USER", "KAFKA_SASL_PASSWORD", "KAFKA_SASL_PASSWORD_FILE", "KAFKA_TIMEOUT",
	"NATS_URL", "NATS_SUBJECT", "NATS_CREDS_FILE", "NATS_TOKEN", "NATS_TOKEN_FILE", "NATS_TLS_CA_FILE",
	"NATS_CREATE_STREAM", "NATS_PUBLISH_TIMEOUT",
	"KAFKA_PAYMENTS_TOPIC", "NATS_PAYMENTS_SUBJECT",
	"PAYMENTS_WEBHOOK_PATH", "PAYMENTS_SIGNING_SECRET", "PAYMENTS_SIGNING_SECRET_FILE", "PAYMENTS_DEDUP_FIELDS",
}

// cleanEnv unsets every BATCHHOOK_ variable and every unprefixed name we
// test with, restoring them when the test ends. Setting a variable to ""
// is not the same as unsetting it, so t.Setenv alone is not enough.
func cleanEnv(t *testing.T) {
	t.Helper()
	names := map[string]bool{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BATCHHOOK_") {
			names[k] = true
		}
	}
	for _, s := range shortNames {
		names[s] = true
		names["BATCHHOOK_"+s] = true
	}
	for k := range names {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

// requiredEnv sets only the required variables.
func requiredEnv(t *testing.T) {
	t.Helper()
	cleanEnv(t)
	t.Setenv("BATCHHOOK_SIGNING_SECRET", reqSecret)
	t.Setenv("BATCHHOOK_API_KEY", reqKey)
	t.Setenv("BATCHHOOK_API_BASE_URL", reqURL)
}

func mustLoad(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Load(config.TestSinks)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// namesVar reports whether msg names variable v as a whole word, so that
// BATCHHOOK_API_KEY is not matched by BATCHHOOK_API_KEY_FILE.
func namesVar(msg, v string) bool {
	return regexp.MustCompile(`(^|[^A-Z0-9_])` + regexp.QuoteMeta(v) + `($|[^A-Z0-9_])`).MatchString(msg)
}

func TestLoadReadsEveryVariableUnderItsPrefixedName(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		short string
		value string
		field string
		want  any
	}{
		{"LISTEN_ADDR", "127.0.0.1:9999", "ListenAddr", "127.0.0.1:9999"},
		{"WEBHOOK_PATH", "/hooks/lookup", "WebhookPath", "/hooks/lookup"},
		{"SIGNING_SECRET", "other secret ", "SigningSecret", config.Secret("other secret ")},
		{"API_BASE_URL", "http://127.0.0.1:1234", "APIBaseURL", "http://127.0.0.1:1234"},
		{"API_KEY", "other-key", "APIKey", config.Secret("other-key")},
		{"DATA_DIR", filepath.Join(dir, "d"), "DataDir", filepath.Join(dir, "d")},
		{"EXPORT_DIR", filepath.Join(dir, "e"), "ExportDir", filepath.Join(dir, "e")},
		{"PAGE_LIMIT", "250", "PageLimit", 250},
		{"CURSOR_PARAM", "after", "CursorParam", "after"},
		{"RESULTS_FIELD", "items", "ResultsField", "items"},
		{"FETCH_WORKERS", "7", "FetchWorkers", 7},
		{"FETCH_WORKERS", "0", "FetchWorkers", 0},
		{"RETENTION", "48h", "Retention", 48 * time.Hour},
		{"FETCH_TIMEOUT", "12s", "FetchTimeout", 12 * time.Second},
		{"BACKOFF_BASE", "250ms", "BackoffBase", 250 * time.Millisecond},
		{"BACKOFF_MAX", "90s", "BackoffMax", 90 * time.Second},
		{"NOT_FOUND_GRACE", "20m", "NotFoundGrace", 20 * time.Minute},
		{"EXPORT_RETENTION", "2s", "ExportRetention", 2 * time.Second},
		{"EXPORT_RETENTION", "0", "ExportRetention", time.Duration(0)},
		{"RECORD_RETENTION", "48h", "RecordRetention", 48 * time.Hour},
		{"PURGE_INTERVAL", "200ms", "PurgeInterval", 200 * time.Millisecond},
		{"MAX_BODY_BYTES", "131072", "MaxBodyBytes", int64(131072)},
		{"MAX_PAGE_BYTES", "1048576", "MaxPageBytes", int64(1048576)},
		{"SUBMIT_PER_MINUTE", "2", "SubmitPerMinute", 2},
		{"MAX_IN_FLIGHT", "3", "MaxInFlight", 3},
		{"RECONCILE_AFTER", "2s", "ReconcileAfter", 2 * time.Second},
		{"STATUS_FIELD", "state", "StatusField", "state"},
		{"MAX_SUBMISSION_BYTES", "2048", "MaxSubmissionBytes", int64(2048)},
		{"RESUBMIT_FIELD", "outcome", "ResubmitField", "outcome"},
		{"RESUBMIT_VALUES", "pending", "ResubmitValues", "pending"},
		{"ITEM_CPF_FIELD", "document", "ItemCPFField", "document"},
		{"LOG_LEVEL", "debug", "LogLevel", "debug"},
		{"LOG_FORMAT", "console", "LogFormat", "console"},
		{"ADMIN_ADDR", "127.0.0.2:9191", "AdminAddr", "127.0.0.2:9191"},
		{"ADMIN_TOKEN", "tok en of 16 chars", "AdminToken", config.Secret("tok en of 16 chars")},
		{"MAX_CONNECTIONS", "20000", "MaxConnections", 20000},
		{"CONSOLE", "false", "Console", false},
		{"CONSOLE_SESSION", "30m", "ConsoleSession", 30 * time.Minute},
		{"MEMORY_LIMIT", "1GiB", "MemoryLimit", "1GiB"},
		{"PAYMENTS_WEBHOOK_PATH", "/hooks/pay", "PaymentsWebhookPath", "/hooks/pay"},
		{"PAYMENTS_SIGNING_SECRET", "pay secret ", "PaymentsSigningSecret", config.Secret("pay secret ")},
		{"PAYMENTS_DEDUP_FIELDS", "id,data.status", "PaymentsDedupFields", "id,data.status"},
	}
	for _, tt := range tests {
		t.Run(tt.short+"="+tt.value, func(t *testing.T) {
			requiredEnv(t)
			def := reflect.ValueOf(mustLoad(t)).Elem().FieldByName(tt.field)
			if !def.IsValid() {
				t.Fatalf("no field %s", tt.field)
			}
			if reflect.DeepEqual(def.Interface(), tt.want) {
				t.Fatalf("test value %v for %s equals the default: pick another", tt.want, tt.short)
			}
			t.Setenv("BATCHHOOK_"+tt.short, tt.value)
			got := reflect.ValueOf(mustLoad(t)).Elem().FieldByName(tt.field).Interface()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("BATCHHOOK_%s=%q: %s = %#v, want %#v", tt.short, tt.value, tt.field, got, tt.want)
			}
		})
	}
}

func TestLoadReadsSecretFiles(t *testing.T) {
	requiredEnv(t)
	if err := os.Unsetenv("BATCHHOOK_SIGNING_SECRET"); err != nil {
		t.Fatal(err)
	}
	if err := os.Unsetenv("BATCHHOOK_API_KEY"); err != nil {
		t.Fatal(err)
	}
	sigPath := writeFile(t, "from-file secret\n")
	keyPath := writeFile(t, "key-from-file\r\n")
	t.Setenv("BATCHHOOK_SIGNING_SECRET_FILE", sigPath)
	t.Setenv("BATCHHOOK_API_KEY_FILE", keyPath)
	c := mustLoad(t)
	if string(c.SigningSecret) != "from-file secret" {
		t.Errorf("SigningSecret = %q, want %q", []byte(c.SigningSecret), "from-file secret")
	}
	if string(c.APIKey) != "key-from-file" {
		t.Errorf("APIKey = %q, want %q", []byte(c.APIKey), "key-from-file")
	}
	if c.SigningSecretFile != sigPath || c.APIKeyFile != keyPath {
		t.Errorf("file fields = %q, %q; want %q, %q", c.SigningSecretFile, c.APIKeyFile, sigPath, keyPath)
	}
}

func TestLoadIgnoresUnprefixedVariables(t *testing.T) {
	requiredEnv(t)
	// Every unprefixed name holds a value that would change the result or
	// fail validation if it were read.
	bogus := map[string]string{
		"LISTEN_ADDR": "not-an-address", "WEBHOOK_PATH": "no-slash", "SIGNING_SECRET": "unprefixed-secret",
		"SIGNING_SECRET_FILE": "/nonexistent/secret", "API_BASE_URL": "ftp://wrong", "API_KEY": "unprefixed-key",
		"API_KEY_FILE": "/nonexistent/key", "DATA_DIR": "/unprefixed/data", "EXPORT_DIR": "/unprefixed/exports",
		"PAGE_LIMIT": "abc", "CURSOR_PARAM": "limit", "RESULTS_FIELD": "unprefixed", "FETCH_WORKERS": "-3",
		"RETENTION": "-1h", "FETCH_TIMEOUT": "zzz", "BACKOFF_BASE": "0", "BACKOFF_MAX": "1ns",
		"NOT_FOUND_GRACE": "-1h", "EXPORT_RETENTION": "-1h", "RECORD_RETENTION": "-2h", "PURGE_INTERVAL": "0s",
		"MAX_BODY_BYTES": "1", "MAX_PAGE_BYTES": "1", "LOG_LEVEL": "loud", "LOG_FORMAT": "xml",
		"ADMIN_ADDR": "nope", "ADMIN_TOKEN": "", "ADMIN_TOKEN_FILE": "/nonexistent/token", "CONSOLE": "maybe", "CONSOLE_SESSION": "0s", "CONSOLE_HOSTS": "http://x/",
		"SUBMIT_PER_MINUTE": "0", "MAX_IN_FLIGHT": "-1", "RECONCILE_AFTER": "0s", "STATUS_FIELD": "unprefixed",
		"MAX_SUBMISSION_BYTES": "1", "RESUBMIT_FIELD": "unprefixed", "RESUBMIT_VALUES": ",", "ITEM_CPF_FIELD": "unprefixed",
		"REPAIR_PERMISSIONS": "true",
		"MAX_CONNECTIONS":    "0", "MEMORY_LIMIT": "lots", "TRUSTED_PROXIES": "0.0.0.0/0", "REJECTED_KEEP": "-1", "PPROF_ADDR": "0.0.0.0:6060",
		"SINKS": "s3", "SINK_WORKERS": "0", "HTTP_SINK_URL": "ftp://x", "HTTP_SINK_SECRET": "plain",
		"HTTP_SINK_SECRET_FILE": "/nonexistent/hook", "HTTP_SINK_MAX_ITEMS": "0", "HTTP_SINK_TIMEOUT": "0s",
		"EXEC_SINK_COMMAND": "not json", "EXEC_SINK_TIMEOUT": "0s", "EXEC_SINK_LOG_OUTPUT": "true",
		"KAFKA_BROKERS": "nope", "KAFKA_TOPIC": "a/b", "KAFKA_TRANSACTIONAL_ID": "a b", "KAFKA_TLS": "maybe",
		"KAFKA_TLS_CA_FILE": "/nonexistent/ca", "KAFKA_SASL_MECHANISM": "gssapi", "KAFKA_SASL_USER": "unprefixed",
		"KAFKA_SASL_PASSWORD": "unprefixed", "KAFKA_SASL_PASSWORD_FILE": "/nonexistent/pw", "KAFKA_TIMEOUT": "0s",
		"NATS_URL": "nats://u:p@x", "NATS_SUBJECT": "un.prefixed", "NATS_CREDS_FILE": "/nonexistent/creds",
		"NATS_TOKEN": "unprefixed", "NATS_TOKEN_FILE": "/nonexistent/token", "NATS_TLS_CA_FILE": "/nonexistent/ca",
		"NATS_CREATE_STREAM": "true", "NATS_PUBLISH_TIMEOUT": "0s",
		"KAFKA_PAYMENTS_TOPIC": "un prefixed", "NATS_PAYMENTS_SUBJECT": "un.prefixed.>",
		"PAYMENTS_WEBHOOK_PATH": "no-slash", "PAYMENTS_SIGNING_SECRET": "unprefixed",
		"PAYMENTS_SIGNING_SECRET_FILE": "/nonexistent/pay", "PAYMENTS_DEDUP_FIELDS": "a..b",
	}
	if len(bogus) != len(shortNames) {
		t.Fatalf("bogus covers %d names, want %d", len(bogus), len(shortNames))
	}
	for k, v := range bogus {
		t.Setenv(k, v)
	}
	got := mustLoad(t)

	cleanEnv(t)
	requiredEnv(t)
	want := mustLoad(t)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unprefixed variables changed the config:\n got %+v\nwant %+v", got, want)
	}
	if string(got.APIKey) != reqKey || string(got.SigningSecret) != reqSecret {
		t.Errorf("secrets were taken from unprefixed variables")
	}
}

func TestLoadDoesNotFallBackToUnprefixedRequiredValues(t *testing.T) {
	for _, short := range []string{"SIGNING_SECRET", "API_KEY", "API_BASE_URL"} {
		t.Run(short, func(t *testing.T) {
			requiredEnv(t)
			val := os.Getenv("BATCHHOOK_" + short)
			if err := os.Unsetenv("BATCHHOOK_" + short); err != nil {
				t.Fatal(err)
			}
			t.Setenv(short, val)
			_, err := config.Load(config.TestSinks)
			if err == nil {
				t.Fatalf("Load succeeded with only unprefixed %s set", short)
			}
			if !namesVar(err.Error(), "BATCHHOOK_"+short) {
				t.Errorf("error %q does not name BATCHHOOK_%s", err, short)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	requiredEnv(t)
	c := mustLoad(t)
	want := config.Config{
		ListenAddr:      ":8080",
		WebhookPath:     "/webhooks/batch-completed",
		SigningSecret:   config.Secret(reqSecret),
		APIKey:          config.Secret(reqKey),
		APIBaseURL:      reqURL,
		DataDir:         "./data",
		ExportDir:       filepath.Join("data", "exports"),
		AdminAddr:       "127.0.0.1:9090",
		PageLimit:       100,
		CursorParam:     "cursor",
		FetchWorkers:    4,
		Retention:       7 * 24 * time.Hour,
		FetchTimeout:    30 * time.Second,
		BackoffBase:     time.Second,
		BackoffMax:      5 * time.Minute,
		NotFoundGrace:   time.Hour,
		ExportRetention: 720 * time.Hour, RecordRetention: 2160 * time.Hour, PurgeInterval: time.Hour,
		MaxBodyBytes:    64 << 10,
		MaxPageBytes:    32 << 20,
		SubmitPerMinute: 10, MaxInFlight: 50, ReconcileAfter: 15 * time.Minute, StatusField: "status",
		MaxSubmissionBytes: 16 << 20, ResubmitField: "result", ResubmitValues: "pending,incomplete", ItemCPFField: "cpf",
		LogLevel:       "info",
		LogFormat:      "json",
		MaxConnections: 10000, MemoryLimit: "256MiB", RejectedKeep: 100, Console: true, ConsoleSession: 8 * time.Hour,
		Sinks: "file", SinkWorkers: 2, HTTPSinkMaxItems: 1000, HTTPSinkTimeout: 30 * time.Second,
		ExecSinkTimeout: 5 * time.Minute,
		KafkaTopic:      "batchhook.results", KafkaTimeout: time.Minute,
		NatsSubject: "batchhook.results", NatsPublishTimeout: 10 * time.Second,
		PaymentSinks:        config.PaymentSinks{KafkaPaymentsTopic: "batchhook.payments", NatsPaymentsSubject: "batchhook.payments"},
		PaymentsWebhookPath: "/webhooks/payments",
		PaymentsDedupFields: "transaction.id,transaction.status,transaction.updated_at",
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *c, want)
	}
}

func TestExportDirDefaultsUnderDataDir(t *testing.T) {
	requiredEnv(t)
	data := filepath.Join(t.TempDir(), "state")
	t.Setenv("BATCHHOOK_DATA_DIR", data)
	c := mustLoad(t)
	if want := filepath.Join(data, "exports"); c.ExportDir != want {
		t.Errorf("ExportDir = %q, want %q", c.ExportDir, want)
	}
}

// TestDefaultsMatchLoad compares Defaults() with Load() given only the
// required variables, field by field, except the secrets, their files and
// the URL (which have no default) and ExportDir (derived by Load; see
// TestDefaultsExportDir).
func TestDefaultsMatchLoad(t *testing.T) {
	requiredEnv(t)
	loaded := reflect.ValueOf(*mustLoad(t))
	defs := reflect.ValueOf(config.Defaults())
	skip := map[string]bool{
		"SigningSecret": true, "SigningSecretFile": true, "APIKey": true, "APIKeyFile": true,
		"APIBaseURL": true, "ExportDir": true,
	}
	typ := loaded.Type()
	compared := 0
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if skip[name] {
			continue
		}
		compared++
		if g, w := defs.Field(i).Interface(), loaded.Field(i).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("Defaults().%s = %#v, Load gives %#v", name, g, w)
		}
	}
	if compared < 15 {
		t.Errorf("compared only %d fields", compared)
	}
}

// TestDefaultsExportDir: a Config built from Defaults() must not end up
// exporting to the process's working directory. Either Defaults() derives
// ExportDir like Load does, or Validate refuses an empty one.
func TestDefaultsExportDir(t *testing.T) {
	requiredEnv(t)
	loaded := mustLoad(t)
	c := config.Defaults()
	c.SigningSecret = config.Secret(reqSecret)
	c.APIKey = config.Secret(reqKey)
	c.APIBaseURL = reqURL
	err := c.Validate(config.TestSinks)
	if c.ExportDir != loaded.ExportDir && (err == nil || !namesVar(err.Error(), "BATCHHOOK_EXPORT_DIR")) {
		t.Errorf("Defaults().ExportDir = %q (Load gives %q) and Validate returns %v", c.ExportDir, loaded.ExportDir, err)
	}
}

func TestLoadErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string // "" value = unset
		want string            // the variable the error must name
	}{
		{"signing secret missing", map[string]string{"SIGNING_SECRET": ""}, "BATCHHOOK_SIGNING_SECRET"},
		{"signing secret empty", map[string]string{"SIGNING_SECRET": "\x00empty"}, "BATCHHOOK_SIGNING_SECRET"},
		{"api key missing", map[string]string{"API_KEY": ""}, "BATCHHOOK_API_KEY"},
		{"api key empty", map[string]string{"API_KEY": "\x00empty"}, "BATCHHOOK_API_KEY"},
		{"base url missing", map[string]string{"API_BASE_URL": ""}, "BATCHHOOK_API_BASE_URL"},
		{"base url relative", map[string]string{"API_BASE_URL": "/api"}, "BATCHHOOK_API_BASE_URL"},
		{"base url ftp", map[string]string{"API_BASE_URL": "ftp://provider.example"}, "BATCHHOOK_API_BASE_URL"},
		{"base url no host", map[string]string{"API_BASE_URL": "https://"}, "BATCHHOOK_API_BASE_URL"},
		{"base url unparsable", map[string]string{"API_BASE_URL": "http://[::1"}, "BATCHHOOK_API_BASE_URL"},
		{"base url with query", map[string]string{"API_BASE_URL": "https://p.example/?a=1"}, "BATCHHOOK_API_BASE_URL"},
		{"base url with fragment", map[string]string{"API_BASE_URL": "https://p.example/#x"}, "BATCHHOOK_API_BASE_URL"},
		{"listen addr", map[string]string{"LISTEN_ADDR": "8080"}, "BATCHHOOK_LISTEN_ADDR"},
		{"webhook path relative", map[string]string{"WEBHOOK_PATH": "hooks"}, "BATCHHOOK_WEBHOOK_PATH"},
		{"webhook path query", map[string]string{"WEBHOOK_PATH": "/hooks?x=1"}, "BATCHHOOK_WEBHOOK_PATH"},
		{"data dir empty", map[string]string{"DATA_DIR": "\x00empty"}, "BATCHHOOK_DATA_DIR"},
		{"page limit abc", map[string]string{"PAGE_LIMIT": "abc"}, "BATCHHOOK_PAGE_LIMIT"},
		{"page limit 0", map[string]string{"PAGE_LIMIT": "0"}, "BATCHHOOK_PAGE_LIMIT"},
		{"cursor param limit", map[string]string{"CURSOR_PARAM": "limit"}, "BATCHHOOK_CURSOR_PARAM"},
		{"cursor param space", map[string]string{"CURSOR_PARAM": "a b"}, "BATCHHOOK_CURSOR_PARAM"},
		{"cursor param ampersand", map[string]string{"CURSOR_PARAM": "a&b"}, "BATCHHOOK_CURSOR_PARAM"},
		{"cursor param empty", map[string]string{"CURSOR_PARAM": "\x00empty"}, "BATCHHOOK_CURSOR_PARAM"},
		{"fetch workers negative", map[string]string{"FETCH_WORKERS": "-1"}, "BATCHHOOK_FETCH_WORKERS"},
		{"fetch workers 257", map[string]string{"FETCH_WORKERS": "257"}, "BATCHHOOK_FETCH_WORKERS"},
		{"fetch workers text", map[string]string{"FETCH_WORKERS": "four"}, "BATCHHOOK_FETCH_WORKERS"},
		{"retention negative", map[string]string{"RETENTION": "-1h"}, "BATCHHOOK_RETENTION"},
		{"retention zero", map[string]string{"RETENTION": "0s"}, "BATCHHOOK_RETENTION"},
		{"retention fractional days", map[string]string{"RETENTION": "1.5d"}, "BATCHHOOK_RETENTION"},
		{"fetch timeout zero", map[string]string{"FETCH_TIMEOUT": "0s"}, "BATCHHOOK_FETCH_TIMEOUT"},
		{"fetch timeout unitless", map[string]string{"FETCH_TIMEOUT": "30"}, "BATCHHOOK_FETCH_TIMEOUT"},
		{"backoff base zero", map[string]string{"BACKOFF_BASE": "0s"}, "BATCHHOOK_BACKOFF_BASE"},
		{"backoff base text", map[string]string{"BACKOFF_BASE": "soon"}, "BATCHHOOK_BACKOFF_BASE"},
		{"backoff max below base", map[string]string{"BACKOFF_BASE": "10s", "BACKOFF_MAX": "5s"}, "BATCHHOOK_BACKOFF_MAX"},
		{"not found grace negative", map[string]string{"NOT_FOUND_GRACE": "-1s"}, "BATCHHOOK_NOT_FOUND_GRACE"},
		{"export retention negative", map[string]string{"EXPORT_RETENTION": "-1h"}, "BATCHHOOK_EXPORT_RETENTION"},
		{"record retention negative", map[string]string{"RECORD_RETENTION": "-1s"}, "BATCHHOOK_RECORD_RETENTION"},
		{"purge interval zero", map[string]string{"PURGE_INTERVAL": "0s"}, "BATCHHOOK_PURGE_INTERVAL"},
		{"max body bytes small", map[string]string{"MAX_BODY_BYTES": "1023"}, "BATCHHOOK_MAX_BODY_BYTES"},
		{"max body bytes large", map[string]string{"MAX_BODY_BYTES": "16777217"}, "BATCHHOOK_MAX_BODY_BYTES"},
		{"max body bytes text", map[string]string{"MAX_BODY_BYTES": "64k"}, "BATCHHOOK_MAX_BODY_BYTES"},
		{"max page bytes small", map[string]string{"MAX_PAGE_BYTES": "4095"}, "BATCHHOOK_MAX_PAGE_BYTES"},
		{"submit per minute zero", map[string]string{"SUBMIT_PER_MINUTE": "0"}, "BATCHHOOK_SUBMIT_PER_MINUTE"},
		{"max in flight zero", map[string]string{"MAX_IN_FLIGHT": "0"}, "BATCHHOOK_MAX_IN_FLIGHT"},
		{"reconcile after zero", map[string]string{"RECONCILE_AFTER": "0s"}, "BATCHHOOK_RECONCILE_AFTER"},
		{"max submission bytes small", map[string]string{"MAX_SUBMISSION_BYTES": "10"}, "BATCHHOOK_MAX_SUBMISSION_BYTES"},
		{"resubmit values blank", map[string]string{"RESUBMIT_VALUES": " , "}, "BATCHHOOK_RESUBMIT_VALUES"},
		{"log level", map[string]string{"LOG_LEVEL": "verbose"}, "BATCHHOOK_LOG_LEVEL"},
		{"log level verbose upper", map[string]string{"LOG_LEVEL": "VERBOSE"}, "BATCHHOOK_LOG_LEVEL"},
		{"log format xml", map[string]string{"LOG_FORMAT": "xml"}, "BATCHHOOK_LOG_FORMAT"},
		{"secret and file", map[string]string{"SIGNING_SECRET_FILE": "@file:x\n"}, "BATCHHOOK_SIGNING_SECRET"},
		{"key and file", map[string]string{"API_KEY_FILE": "@file:x\n"}, "BATCHHOOK_API_KEY"},
		{"empty secret file", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"secret file only CRLF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:\r\n"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"secret file only LF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:\n"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"secret file missing", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "/nonexistent/batchhook/secret"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"empty key file", map[string]string{"API_KEY": "", "API_KEY_FILE": "@file:\n"}, "BATCHHOOK_API_KEY_FILE"},
		{"key file missing", map[string]string{"API_KEY": "", "API_KEY_FILE": "/nonexistent/batchhook/key"}, "BATCHHOOK_API_KEY_FILE"},
		{"max connections zero", map[string]string{"MAX_CONNECTIONS": "0"}, "BATCHHOOK_MAX_CONNECTIONS"},
		{"max connections text", map[string]string{"MAX_CONNECTIONS": "many"}, "BATCHHOOK_MAX_CONNECTIONS"},
		{"console session too short", map[string]string{"CONSOLE_SESSION": "10s"}, "BATCHHOOK_CONSOLE_SESSION"},
		{"console session too long", map[string]string{"CONSOLE_SESSION": "200h"}, "BATCHHOOK_CONSOLE_SESSION"},
		{"console not a bool", map[string]string{"CONSOLE": "maybe"}, "BATCHHOOK_CONSOLE"},
		{"console host with a scheme", map[string]string{"CONSOLE_HOSTS": "https://ops.example.org"}, "BATCHHOOK_CONSOLE_HOSTS"},
		{"console host with a port", map[string]string{"CONSOLE_HOSTS": "ops.example.org:8443"}, "BATCHHOOK_CONSOLE_HOSTS"},
		{"console host wildcard", map[string]string{"CONSOLE_HOSTS": "*.example.org"}, "BATCHHOOK_CONSOLE_HOSTS"},
		{"admin token short", map[string]string{"ADMIN_TOKEN": "fifteen-chars-x"}, "BATCHHOOK_ADMIN_TOKEN"},
		{"memory limit unit", map[string]string{"MEMORY_LIMIT": "256M"}, "BATCHHOOK_MEMORY_LIMIT"},
		{"memory limit small", map[string]string{"MEMORY_LIMIT": "16MiB"}, "BATCHHOOK_MEMORY_LIMIT"},
		{"memory limit negative", map[string]string{"MEMORY_LIMIT": "-1GiB"}, "BATCHHOOK_MEMORY_LIMIT"},
		{"memory limit empty", map[string]string{"MEMORY_LIMIT": "\x00empty"}, "BATCHHOOK_MEMORY_LIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requiredEnv(t)
			for short, v := range tt.env {
				k := "BATCHHOOK_" + short
				switch {
				case v == "":
					if err := os.Unsetenv(k); err != nil {
						t.Fatal(err)
					}
				case v == "\x00empty":
					t.Setenv(k, "")
				case strings.HasPrefix(v, "@file:"):
					t.Setenv(k, writeFile(t, strings.TrimPrefix(v, "@file:")))
				default:
					t.Setenv(k, v)
				}
			}
			c, err := config.Load(config.TestSinks)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", c)
			}
			if c != nil {
				t.Errorf("Load returned a config with its error")
			}
			msg := err.Error()
			if !namesVar(msg, tt.want) {
				t.Errorf("error %q does not name %s", msg, tt.want)
			}
			for _, s := range []string{reqSecret, reqKey} {
				if strings.Contains(msg, s) {
					t.Errorf("error %q contains a secret", msg)
				}
			}
		})
	}
}

func TestReadSecretFile(t *testing.T) {
	tests := []struct {
		content string
		want    string // "" = error
	}{
		{"a", "a"},
		{"a\n", "a"},
		{"a\r\n", "a"},
		{"a\n\n", "a\n"},
		{"a\r\n\r\n", "a\r\n"},
		{"a\n\r\n", "a\n"},
		{"a ", "a "},
		{"a \n", "a "},
		{" a\t\n", " a\t"},
		{"a\r", "a\r"},
		{"a\n\r", "a\n\r"},
		{"\xff\x00bin\n", "\xff\x00bin"},
		{"\n\n", "\n"},
		{" \n", " "},
		{"", ""},
		{"\n", ""},
		{"\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.content), func(t *testing.T) {
			p := writeFile(t, tt.content)
			got, err := config.ReadSecretFile(p)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ReadSecretFile(%q) = %q, want an error", tt.content, []byte(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadSecretFile(%q): %v", tt.content, err)
			}
			if string(got) != tt.want {
				t.Errorf("ReadSecretFile(%q) = %q, want %q", tt.content, []byte(got), tt.want)
			}
		})
	}
	if _, err := config.ReadSecretFile(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("ReadSecretFile of a missing file: want an error")
	}
}

func TestLoadSecretValueIsNotTrimmed(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_SIGNING_SECRET", " padded secret \n")
	c := mustLoad(t)
	if string(c.SigningSecret) != " padded secret \n" {
		t.Errorf("SigningSecret = %q, want it byte for byte", []byte(c.SigningSecret))
	}
}

func TestSecretNeverPrints(t *testing.T) {
	const raw = "hunter2-very-secret"
	s := config.Secret(raw)
	wrapped := struct {
		Key config.Secret
		Ptr *config.Secret
	}{s, &s}
	outputs := map[string]string{
		"String": s.String(),
		"%v":     fmt.Sprintf("%v", s),
		"%s":     fmt.Sprintf("%s", s),
		"%q":     fmt.Sprintf("%q", s),
		"%+v":    fmt.Sprintf("%+v", s),
		"%#v":    fmt.Sprintf("%#v", s),
		"%x":     fmt.Sprintf("%x", s),
		"struct": fmt.Sprintf("%v %+v %#v", wrapped, wrapped, wrapped),
	}
	for _, v := range []any{s, wrapped, map[string]config.Secret{"k": s}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs[fmt.Sprintf("json %T", v)] = string(b)
	}
	hexRaw := hex.EncodeToString([]byte(raw))
	for how, out := range outputs {
		if strings.Contains(out, raw) || strings.Contains(out, hexRaw) || strings.Contains(out, "hunter2") {
			t.Errorf("%s prints the secret: %s", how, out)
		}
		if !strings.Contains(out, "redacted") && !strings.Contains(out, hex.EncodeToString([]byte("[redacted]"))) {
			t.Errorf("%s prints no redaction: %s", how, out)
		}
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	requiredEnv(t)
	c := mustLoad(t)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for how, out := range map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", *c), "%#v": fmt.Sprintf("%#v", *c), "json": string(b),
	} {
		for _, s := range []string{reqSecret, reqKey} {
			if strings.Contains(out, s) {
				t.Errorf("%s of Config prints a secret: %s", how, out)
			}
		}
	}
}

// TestSecretNumericVerbs: the Secret doc says its format verbs print a
// redaction, but a []byte under %d prints its bytes.
func TestSecretNumericVerbs(t *testing.T) {
	s := config.Secret("ab")
	for _, verb := range []string{"%d", "%o", "%b", "%c", "%U"} {
		out := fmt.Sprintf(verb, s)
		if strings.Contains(out, "97") || strings.Contains(out, "141") || strings.Contains(out, "1100001") ||
			strings.Contains(out, "ab") || strings.Contains(out, "a b") || strings.Contains(out, "U+0061") {
			t.Errorf("fmt.Sprintf(%q, Secret) prints the secret's bytes: %s", verb, out)
		}
	}
}

func TestFingerprint(t *testing.T) {
	for _, raw := range []string{"a", "whsec_test secret ", "", "\x00\xff"} {
		sum := sha256.Sum256([]byte(raw))
		want := hex.EncodeToString(sum[:])[:8]
		got := config.Secret(raw).Fingerprint()
		if got != want {
			t.Errorf("Fingerprint(%q) = %q, want %q", raw, got, want)
		}
	}
	if config.Secret("a").Fingerprint() == config.Secret("b").Fingerprint() {
		t.Error("different secrets share a fingerprint")
	}
}

func TestVar(t *testing.T) {
	if got := config.Var("API_KEY"); got != "BATCHHOOK_API_KEY" {
		t.Errorf("Var(API_KEY) = %q", got)
	}
}

func TestAdminTokenRules(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "")
	if _, err := config.Load(config.TestSinks); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_ADMIN_TOKEN") {
		t.Fatalf("empty admin token: %v, want an error naming BATCHHOOK_ADMIN_TOKEN", err)
	}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("file-token-0123456789\r\n"), 0o600)
	os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
	t.Setenv("BATCHHOOK_ADMIN_TOKEN_FILE", file)
	c, err := config.Load(config.TestSinks)
	if err != nil || string(c.AdminToken) != "file-token-0123456789" {
		t.Fatalf("token from file = %q, %v", c.AdminToken, err)
	}
}

func TestAdminOffLoopbackNeedsAToken(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_ADMIN_ADDR", "0.0.0.0:9090")
	if _, err := config.Load(config.TestSinks); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_ADMIN_TOKEN") {
		t.Fatalf("admin on 0.0.0.0 without a token: %v, want an error naming BATCHHOOK_ADMIN_TOKEN", err)
	}
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "t0ken-of-16-char")
	if _, err := config.Load(config.TestSinks); err != nil {
		t.Fatalf("admin on 0.0.0.0 with a token: %v", err)
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:9090", "localhost:9090"} {
		os.Unsetenv("BATCHHOOK_ADMIN_TOKEN")
		t.Setenv("BATCHHOOK_ADMIN_ADDR", addr)
		if _, err := config.Load(config.TestSinks); err != nil {
			t.Fatalf("admin on %s without a token: %v", addr, err)
		}
	}
}

func TestVariablesListsEveryName(t *testing.T) {
	got := map[string]bool{}
	for _, v := range config.Variables() {
		got[v] = true
	}
	for _, short := range shortNames {
		if !got["BATCHHOOK_"+short] {
			t.Errorf("Variables() lacks BATCHHOOK_%s", short)
		}
	}
	if len(got) != len(shortNames) {
		t.Errorf("Variables() has %d names, the config reads %d: %v", len(got), len(shortNames), config.Variables())
	}
}

func TestMemoryLimitBytes(t *testing.T) {
	tests := []struct {
		value string
		want  int64
		set   bool
	}{
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"500MB", 500e6, true},
		{"33554432", 32 << 20, true},
		{"0", 0, false},
		{"off", 0, false},
		{"OFF", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			requiredEnv(t)
			t.Setenv("BATCHHOOK_MEMORY_LIMIT", tt.value)
			got, set := mustLoad(t).MemoryLimitBytes()
			if got != tt.want || set != tt.set {
				t.Errorf("MEMORY_LIMIT=%s: %d, %v; want %d, %v", tt.value, got, set, tt.want, tt.set)
			}
		})
	}
}

// The profile listener is off by default and only ever on loopback.
func TestPprofAddrIsLoopbackOnly(t *testing.T) {
	requiredEnv(t)
	if got := mustLoad(t).PprofAddr; got != "" {
		t.Fatalf("PprofAddr defaults to %q, want off", got)
	}
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.0.0.1:6060", "example.com:6060", "6060"} {
		t.Setenv("BATCHHOOK_PPROF_ADDR", addr)
		if _, err := config.Load(config.TestSinks); err == nil || !namesVar(err.Error(), "BATCHHOOK_PPROF_ADDR") {
			t.Errorf("PPROF_ADDR=%s: %v, want an error naming BATCHHOOK_PPROF_ADDR", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:0"} {
		t.Setenv("BATCHHOOK_PPROF_ADDR", addr)
		if _, err := config.Load(config.TestSinks); err != nil {
			t.Errorf("PPROF_ADDR=%s: %v", addr, err)
		}
	}
}
