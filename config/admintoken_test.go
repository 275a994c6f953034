package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// An admin token shorter than 16 characters is refused, set directly or
// through its file; the error names the variable and how to make a good
// token, and never quotes the value. Sixteen characters (not bytes) pass.
func TestAShortAdminTokenIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	for _, tc := range []struct {
		env, file, name string
	}{
		{env: "a", name: "BATCHHOOK_ADMIN_TOKEN"},
		{env: "Zq-fifteen-char", name: "BATCHHOOK_ADMIN_TOKEN"},
		{env: "ééééééééééééééé", name: "BATCHHOOK_ADMIN_TOKEN"}, // 30 bytes, 15 characters
		{file: "Zq-fifteen-char\n", name: "BATCHHOOK_ADMIN_TOKEN_FILE"},
	} {
		requiredEnv(t)
		if tc.file != "" {
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("BATCHHOOK_ADMIN_TOKEN_FILE", file)
		} else {
			t.Setenv("BATCHHOOK_ADMIN_TOKEN", tc.env)
		}
		_, err := config.Load(config.TestSinks)
		if err == nil || !strings.HasPrefix(err.Error(), tc.name+":") || !strings.Contains(err.Error(), "openssl rand -hex 32") ||
			!strings.Contains(err.Error(), "16") {
			t.Fatalf("token %q%q: %v; want refused, naming %s, the minimum and how to make one", tc.env, tc.file, err, tc.name)
		}
		if strings.Contains(err.Error(), "Zq-fifteen") {
			t.Fatalf("the error quotes the token: %v", err)
		}
	}
	for _, ok := range []string{"0123456789abcdef", "éééééééééééééééé"} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_ADMIN_TOKEN", ok)
		if _, err := config.Load(config.TestSinks); err != nil {
			t.Fatalf("a %d-character token: %v", len([]rune(ok)), err)
		}
	}
}

// CONSOLE_HOSTS: names, lower-cased, without a trailing dot; blanks
// skipped; IP addresses taken.
func TestConsoleHostNames(t *testing.T) {
	c := config.Defaults()
	c.ConsoleHosts = " Ops.Example.org. ,, batchhook-1.internal,192.0.2.7 "
	got, err := c.ConsoleHostNames()
	if err != nil || strings.Join(got, " ") != "ops.example.org batchhook-1.internal 192.0.2.7" {
		t.Fatalf("ConsoleHostNames = %q, %v", got, err)
	}
	for _, bad := range []string{"ops.example.org/ui", "-x.example", "a..b", "ops example", "[::1]:80"} {
		c.ConsoleHosts = bad
		if _, err := c.ConsoleHostNames(); err == nil || !strings.Contains(err.Error(), "BATCHHOOK_CONSOLE_HOSTS") {
			t.Errorf("%q: %v, want refused", bad, err)
		}
	}
}
