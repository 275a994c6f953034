package config_test

// Secrets whose last bytes are probably a slip.

import (
	"os"
	"testing"
)

func TestSecretsEndingInWhitespaceAreWarned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		warnVar string // "" = no secret_whitespace warning
	}{
		{"env clean", map[string]string{"SIGNING_SECRET": "abc"}, ""},
		{"env trailing blank", map[string]string{"SIGNING_SECRET": "abc "}, "BATCHHOOK_SIGNING_SECRET"},
		{"env trailing newline", map[string]string{"API_KEY": "key\n"}, "BATCHHOOK_API_KEY"},
		{"file one LF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:abc\n"}, ""},
		{"file one CRLF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:abc\r\n"}, ""},
		{"file two LF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:abc\n\n"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"file two CRLF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:abc\r\n\r\n"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
		{"file blank then LF", map[string]string{"SIGNING_SECRET": "", "SIGNING_SECRET_FILE": "@file:abc \n"}, "BATCHHOOK_SIGNING_SECRET_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requiredEnv(t)
			for k, v := range tc.env {
				switch {
				case v == "":
					t.Setenv("BATCHHOOK_"+k, "x")
					unsetenv(t, "BATCHHOOK_"+k)
				case len(v) > 6 && v[:6] == "@file:":
					t.Setenv("BATCHHOOK_"+k, writeFile(t, v[6:]))
				default:
					t.Setenv("BATCHHOOK_"+k, v)
				}
			}
			got := warningsOf(mustLoad(t), "secret_whitespace")
			switch {
			case tc.warnVar == "" && len(got) != 0:
				t.Fatalf("warned %v for a clean secret", got)
			case tc.warnVar != "" && (len(got) != 1 || got[tc.warnVar] == ""):
				t.Fatalf("warnings %v, want one for %s", got, tc.warnVar)
			}
		})
	}
}

func unsetenv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}
