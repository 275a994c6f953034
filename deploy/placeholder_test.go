package deploy

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestSecretManifestPlaceholdersAreRefused: every value of the example
// Secret starts with the prefix batchhook refuses at start
// (config.PlaceholderPrefix), so a Secret applied as shipped stops the pod
// with a line naming the variable instead of running with a fake key.
func TestSecretManifestPlaceholdersAreRefused(t *testing.T) {
	data, ok := at(t, k8sDocs(t)["Secret"], "stringData").(map[string]any)
	if !ok || len(data) == 0 {
		t.Fatal("the Secret manifest has no stringData")
	}
	for k, v := range data {
		if s, _ := v.(string); !strings.HasPrefix(s, config.PlaceholderPrefix) {
			t.Errorf("Secret key %s = %q: start it with %q, which batchhook refuses at start", k, s, config.PlaceholderPrefix)
		}
	}
}
