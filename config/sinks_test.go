package config_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

// whsec24 is "whsec_" + base64 of the 24 bytes 0x00..0x17, made outside Go:
//
//	printf "$(printf '\\%03o' $(seq 0 23))" | base64
const whsec24 = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"

func TestSinkDefaults(t *testing.T) {
	requiredEnv(t)
	c := mustLoad(t)
	if strings.Join(c.SinkNames(), ",") != "file" ||
		c.SinkWorkers != 2 || c.HTTPSinkMaxItems != 1000 || c.HTTPSinkTimeout != 30*time.Second ||
		c.ExecSinkTimeout != 5*time.Minute || c.ExecSinkLogOutput {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestSinksWithHTTPAndExec(t *testing.T) {
	requiredEnv(t)
	t.Setenv("BATCHHOOK_SINKS", " http, exec ,http")
	t.Setenv("BATCHHOOK_HTTP_SINK_URL", "https://receiver.example/hooks")
	t.Setenv("BATCHHOOK_HTTP_SINK_SECRET_FILE", writeFile(t, whsec24+"\n"))
	t.Setenv("BATCHHOOK_EXEC_SINK_COMMAND", `["sh","-c","exit 0"]`)
	t.Setenv("BATCHHOOK_EXEC_SINK_LOG_OUTPUT", "true")
	c := mustLoad(t)
	if got := strings.Join(c.SinkNames(), ","); got != "http,exec" {
		t.Fatalf("sinks %q", got)
	}
	key, err := config.DecodeSinkSecret(c.HTTPSinkSecret)
	want := make([]byte, 24)
	for i := range want {
		want[i] = byte(i)
	}
	if err != nil || !bytes.Equal(key, want) {
		t.Fatalf("decoded key = %x, %v; want %x", []byte(key), err, want)
	}
	if argv := c.ExecSinkArgv(); len(argv) != 3 || argv[2] != "exit 0" || !c.ExecSinkLogOutput {
		t.Fatalf("argv = %q", argv)
	}
}

func TestSinkErrorsNameTheVariable(t *testing.T) {
	http := map[string]string{"SINKS": "http", "HTTP_SINK_URL": "https://r.example/", "HTTP_SINK_SECRET": whsec24}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
		not  string // text the error must not carry
	}{
		{"unknown sink", map[string]string{"SINKS": "file,s3"}, "BATCHHOOK_SINKS", ""},
		{"no sink", map[string]string{"SINKS": " , "}, "BATCHHOOK_SINKS", ""},
		{"nats without its url", map[string]string{"SINKS": "nats"}, "BATCHHOOK_NATS_URL", ""},
		{"workers 0", map[string]string{"SINK_WORKERS": "0"}, "BATCHHOOK_SINK_WORKERS", ""},
		{"workers 65", map[string]string{"SINK_WORKERS": "65"}, "BATCHHOOK_SINK_WORKERS", ""},
		{"http without url", with(http, "HTTP_SINK_URL", ""), "BATCHHOOK_HTTP_SINK_URL", ""},
		{"http url ftp", with(http, "HTTP_SINK_URL", "ftp://r.example/"), "BATCHHOOK_HTTP_SINK_URL", ""},
		{"http url relative", with(http, "HTTP_SINK_URL", "/hooks"), "BATCHHOOK_HTTP_SINK_URL", ""},
		{"http url ftp with a token", with(http, "HTTP_SINK_URL", "ftp://r.example/hooks?token=s3cr3t"), "BATCHHOOK_HTTP_SINK_URL", "s3cr3t"},
		{"http url hostless with a token", with(http, "HTTP_SINK_URL", "https:///hooks#s3cr3t"), "BATCHHOOK_HTTP_SINK_URL", "s3cr3t"},
		{"http url userinfo", with(http, "HTTP_SINK_URL", "https://u:hunter2@r.example/"), "BATCHHOOK_HTTP_SINK_URL", "hunter2"},
		{"http without secret", with(http, "HTTP_SINK_SECRET", ""), "BATCHHOOK_HTTP_SINK_SECRET", ""},
		{"http secret no prefix", with(http, "HTTP_SINK_SECRET", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"), "BATCHHOOK_HTTP_SINK_SECRET", "AAECAwQF"},
		{"http secret not base64", with(http, "HTTP_SINK_SECRET", "whsec_!!!notbase64"), "BATCHHOOK_HTTP_SINK_SECRET", "notbase64"},
		{"http secret short", with(http, "HTTP_SINK_SECRET", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMU"), "BATCHHOOK_HTTP_SINK_SECRET", ""},
		{"http max items 0", with(http, "HTTP_SINK_MAX_ITEMS", "0"), "BATCHHOOK_HTTP_SINK_MAX_ITEMS", ""},
		{"http max items 10001", with(http, "HTTP_SINK_MAX_ITEMS", "10001"), "BATCHHOOK_HTTP_SINK_MAX_ITEMS", ""},
		{"http timeout 0", with(http, "HTTP_SINK_TIMEOUT", "0s"), "BATCHHOOK_HTTP_SINK_TIMEOUT", ""},
		{"exec without command", map[string]string{"SINKS": "exec"}, "BATCHHOOK_EXEC_SINK_COMMAND", ""},
		{"exec not json", map[string]string{"SINKS": "exec", "EXEC_SINK_COMMAND": "/bin/true --x"}, "BATCHHOOK_EXEC_SINK_COMMAND", ""},
		{"exec empty array", map[string]string{"SINKS": "exec", "EXEC_SINK_COMMAND": "[]"}, "BATCHHOOK_EXEC_SINK_COMMAND", ""},
		{"exec not on path", map[string]string{"SINKS": "exec", "EXEC_SINK_COMMAND": `["no-such-program-batchhook"]`}, "BATCHHOOK_EXEC_SINK_COMMAND", ""},
		{"exec timeout 0", map[string]string{"SINKS": "exec", "EXEC_SINK_COMMAND": `["/bin/true"]`, "EXEC_SINK_TIMEOUT": "0s"}, "BATCHHOOK_EXEC_SINK_TIMEOUT", ""},
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
	// The same sinks without a fault load: every row above fails for its
	// own reason.
	requiredEnv(t)
	for k, v := range http {
		t.Setenv("BATCHHOOK_"+k, v)
	}
	mustLoad(t)
}
