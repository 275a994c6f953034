package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadGateway(t *testing.T) {
	file := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(file, []byte("gw sécret \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Var("GATEWAY_URL"), "https://gw.example/")
	t.Setenv(Var("SANDBOX_URL"), "http://127.0.0.1:8081")
	t.Setenv(Var("GATEWAY_AUTH_HEADER"), "X-Api-Key")
	t.Setenv(Var("GATEWAY_AUTH_VALUE_FILE"), file)
	g, err := LoadGateway()
	if err != nil {
		t.Fatal(err)
	}
	if g.GatewayURL != "https://gw.example" || g.SandboxURL != "http://127.0.0.1:8081" || g.AuthHeader != "X-Api-Key" || string(g.AuthValue) != "gw sécret " {
		t.Fatalf("%+v", g)
	}
}

func TestLoadGatewayErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GATEWAY_URL": "ftp://x"}, "BATCHHOOK_GATEWAY_URL"},
		{map[string]string{"SANDBOX_URL": "https://u:pw@x"}, "BATCHHOOK_SANDBOX_URL"},
		{map[string]string{"SANDBOX_URL": ""}, "BATCHHOOK_SANDBOX_URL"},
		{map[string]string{"GATEWAY_URL": "https://x/?key=s3cr3t"}, "BATCHHOOK_GATEWAY_URL"},
		{map[string]string{"GATEWAY_AUTH_HEADER": "X-Key"}, "BATCHHOOK_GATEWAY_AUTH_VALUE"},
		{map[string]string{"GATEWAY_AUTH_VALUE": "v"}, "BATCHHOOK_GATEWAY_AUTH_HEADER"},
		{map[string]string{"GATEWAY_AUTH_HEADER": "X Key", "GATEWAY_AUTH_VALUE": "v"}, "BATCHHOOK_GATEWAY_AUTH_HEADER"},
		{map[string]string{"GATEWAY_AUTH_HEADER": "X-Key", "GATEWAY_AUTH_VALUE": ""}, "BATCHHOOK_GATEWAY_AUTH_VALUE"},
		{map[string]string{"GATEWAY_AUTH_HEADER": "X-Key", "GATEWAY_AUTH_VALUE": "v", "GATEWAY_AUTH_VALUE_FILE": "/x"}, "BATCHHOOK_GATEWAY_AUTH_VALUE"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(Var(k), v)
			}
			_, err := LoadGateway()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v: error %v, want one naming %s", c.env, err, c.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "pw") {
				t.Fatalf("error %q quotes a credential", err)
			}
		})
	}
}

// TestServiceURLWithoutSchemeSaysAddIt: an IP address with a port and no
// scheme gets the same hint as a host name, not url.Parse's colon error.
func TestServiceURLWithoutSchemeSaysAddIt(t *testing.T) {
	for _, v := range []string{"127.0.0.1:8081", "localhost:8081", "gw.example/api"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(Var("SANDBOX_URL"), v)
			_, err := LoadGateway()
			if err == nil || !strings.Contains(err.Error(), "BATCHHOOK_SANDBOX_URL") || !strings.Contains(err.Error(), "add http:// or https://") {
				t.Fatalf("error %v, want one naming BATCHHOOK_SANDBOX_URL and saying add http:// or https://", err)
			}
		})
	}
}
