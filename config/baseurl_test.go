package config

import (
	"strings"
	"testing"
)

// A base URL that already ends in /api/v1 (the mistake that makes every
// fetch 404) is loaded with a warning that names the variable and the fix;
// a correct one has no warning.
func TestLoadWarnsWhenBaseURLEndsInAPIV1(t *testing.T) {
	for _, tt := range []struct {
		base string
		want string // the suggested base; "" = no warning
	}{
		{"http://127.0.0.1:8081/api/v1", "http://127.0.0.1:8081"},
		{"https://provider.example/lookup/api/v1/", "https://provider.example/lookup"},
		{"https://provider.example/API/V1", "https://provider.example"},
		{"http://127.0.0.1:8081", ""},
		{"https://provider.example/api/v10", ""},
	} {
		t.Run(tt.base, func(t *testing.T) {
			t.Setenv("BATCHHOOK_SIGNING_SECRET", "s")
			t.Setenv("BATCHHOOK_API_KEY", "k")
			t.Setenv("BATCHHOOK_DATA_DIR", t.TempDir())
			t.Setenv("BATCHHOOK_API_BASE_URL", tt.base)
			c, err := Load(TestSinks)
			if err != nil {
				t.Fatal(err)
			}
			var found *Warning
			for i := range c.Warnings {
				if c.Warnings[i].Event == "api_base_url_suspect" {
					found = &c.Warnings[i]
				}
			}
			if tt.want == "" {
				if found != nil {
					t.Fatalf("unexpected warning %+v", found)
				}
				return
			}
			if found == nil {
				t.Fatalf("no api_base_url_suspect warning in %+v", c.Warnings)
			}
			if found.Variable != "BATCHHOOK_API_BASE_URL" || !strings.Contains(found.Message, "BATCHHOOK_API_BASE_URL="+tt.want+" ") ||
				!strings.Contains(found.Message, "/api/v1/batches/{id}") {
				t.Fatalf("warning = %+v, want the variable and the fix %s", found, tt.want)
			}
		})
	}
}
