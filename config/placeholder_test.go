package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestLoadRefusesTheManifestsPlaceholders: a secret left as the example
// Secret manifest ships it is a start error that names the variable (for
// a file, the _FILE variable and the path), never the value.
func TestLoadRefusesTheManifestsPlaceholders(t *testing.T) {
	const value = "replace-with-the-signing-secret"
	t.Run("environment", func(t *testing.T) {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_API_KEY", "replace-with-the-api-key")
		_, err := config.Load(config.TestSinks)
		if err == nil || !namesVar(err.Error(), "BATCHHOOK_API_KEY") || !strings.Contains(err.Error(), "placeholder") {
			t.Fatalf("Load = %v, want an error naming BATCHHOOK_API_KEY and the placeholder", err)
		}
		if strings.Contains(err.Error(), "the-api-key") {
			t.Errorf("the error repeats the value: %v", err)
		}
	})
	t.Run("file", func(t *testing.T) {
		requiredEnv(t)
		if err := os.Unsetenv("BATCHHOOK_SIGNING_SECRET"); err != nil {
			t.Fatal(err)
		}
		// As the kubelet writes a Secret's key: no final newline.
		path := writeFile(t, value)
		t.Setenv("BATCHHOOK_SIGNING_SECRET_FILE", path)
		_, err := config.Load(config.TestSinks)
		if err == nil || !namesVar(err.Error(), "BATCHHOOK_SIGNING_SECRET_FILE") || !strings.Contains(err.Error(), path) {
			t.Fatalf("Load = %v, want an error naming BATCHHOOK_SIGNING_SECRET_FILE and %s", err, path)
		}
		// The same rule for every reader of secret files (reload, sign, verify).
		if _, err := config.ReadSecretFile(path); err == nil {
			t.Error("ReadSecretFile accepted the placeholder")
		}
	})
	t.Run("a real value that merely contains the words", func(t *testing.T) {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_API_KEY", "k-replace-with-x")
		mustLoad(t)
	})
}
