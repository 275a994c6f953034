package e2e

import (
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// An admin token shorter than 16 characters stops the start (exit 2),
// set directly or through its file, with a line that names the variable
// and how to make a good one, and never prints the token.
func TestAShortAdminTokenIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	file := writeTemp(t, "Zq-fifteen-char\n")
	for _, env := range []map[string]string{
		{"BATCHHOOK_ADMIN_TOKEN": "a"},
		{"BATCHHOOK_ADMIN_TOKEN": "Zq-fifteen-char"},
		{"BATCHHOOK_ADMIN_TOKEN_FILE": file},
	} {
		code, stderr, stdout := runServe(t, []string{binary, "serve"}, env)
		if code != 2 {
			t.Fatalf("%v: exit %d, want 2; stderr %s", env, code, stderr)
		}
		name := "BATCHHOOK_ADMIN_TOKEN"
		if _, ok := env["BATCHHOOK_ADMIN_TOKEN_FILE"]; ok {
			name = "BATCHHOOK_ADMIN_TOKEN_FILE"
		}
		stderrLine(t, stderr, name, "16", "openssl rand")
		if strings.Contains(stderr+stdout, "Zq-fifteen") {
			t.Fatalf("%v: the token was printed:\n%s%s", env, stderr, stdout)
		}
	}
	// Sixteen characters start.
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_ADMIN_TOKEN"] = "0123456789abcdef"
	d := startDaemon(t, s.addr, s.env)
	d.stop(t)
}
