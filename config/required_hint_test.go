package config_test

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestRequiredErrorNamesTheVariableMeantForIt: a required variable that is
// missing because it was misspelt or set without the BATCHHOOK_ prefix is
// reported with the name that is set, and never with its value.
func TestRequiredErrorNamesTheVariableMeantForIt(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"misspelt file variable",
			map[string]string{"BATCHHOOK_SIGNING_SECRET_FILES": writeFile(t, reqSecret), "BATCHHOOK_API_KEY": reqKey},
			[]string{"BATCHHOOK_SIGNING_SECRET or BATCHHOOK_SIGNING_SECRET_FILE: required",
				"(BATCHHOOK_SIGNING_SECRET_FILES is set: did you mean BATCHHOOK_SIGNING_SECRET_FILE?)"}},
		{"unprefixed",
			map[string]string{"SIGNING_SECRET": reqSecret, "BATCHHOOK_API_KEY": reqKey},
			[]string{"(SIGNING_SECRET is set: did you mean BATCHHOOK_SIGNING_SECRET?)"}},
		{"lower case",
			map[string]string{"batchhook_signing_secret": reqSecret, "BATCHHOOK_API_KEY": reqKey},
			[]string{"(batchhook_signing_secret is set: did you mean BATCHHOOK_SIGNING_SECRET?)"}},
		{"two missing",
			map[string]string{"BATCHHOOK_SIGNING_SECRET": reqSecret, "API_KEY": reqKey, "BATCHHOOK_API_BASE_UR": reqURL},
			[]string{"BATCHHOOK_API_KEY or BATCHHOOK_API_KEY_FILE (API_KEY is set: did you mean BATCHHOOK_API_KEY?); ",
				"BATCHHOOK_API_BASE_URL (BATCHHOOK_API_BASE_UR is set: did you mean BATCHHOOK_API_BASE_URL?)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("BATCHHOOK_API_BASE_URL", reqURL)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if _, ok := tc.env["BATCHHOOK_API_BASE_UR"]; ok {
				unsetenv(t, "BATCHHOOK_API_BASE_URL")
			}
			_, err := config.Load(config.TestSinks)
			if err == nil {
				t.Fatal("Load succeeded without a required variable")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, secret := range []string{reqSecret, reqKey, reqURL} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a value", err)
				}
			}
		})
	}
}

// TestRequiredErrorHintsOnlyAtACloseName: variables that are ours, or far
// from every required name, add no hint.
func TestRequiredErrorHintsOnlyAtACloseName(t *testing.T) {
	cleanEnv(t)
	t.Setenv("BATCHHOOK_API_KEY", reqKey)
	t.Setenv("BATCHHOOK_API_BASE_URL", reqURL)
	t.Setenv("BATCHHOOK_ADMIN_TOKEN", "t0ken-value-of-16-chars")
	t.Setenv("SECRET", "x")
	_, err := config.Load(config.TestSinks)
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("Load = %v, want a required error without a hint", err)
	}
}
