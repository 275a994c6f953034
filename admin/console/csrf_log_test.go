package console

import (
	"net/http"
	"strings"
	"testing"
)

// The line of a refused form quotes the path it was sent to: the path is
// the sender's, so a CPF in it is masked like every value from a request.
func TestRefusedFormLogsItsPathMasked(t *testing.T) {
	tc := newTestConsole(t, "tok")
	c := tc.client(t)
	tc.signIn(t, c, "tok")
	resp, _ := do(t, c, http.MethodPost, tc.srv.URL+"/ui/batches/529.982.247-25/refetch", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without a CSRF token: %d", resp.StatusCode)
	}
	logs := tc.logs.String()
	if !strings.Contains(logs, `"event":"console_csrf_refused"`) || !strings.Contains(logs, `"url_path":"/ui/batches/***.***.***-**/refetch"`) ||
		strings.Contains(logs, "529.982.247") {
		t.Fatalf("the refused form's line does not quote its path masked:\n%s", logs)
	}
}
