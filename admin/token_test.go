package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestBearerSchemeIsCaseInsensitive: RFC 9110 scheme names are
// case-insensitive; the token itself is not.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	const token = "s3cret-Token"
	srv, _ := newTestServer(t, token)
	for header, want := range map[string]int{
		"Bearer " + token:                  200,
		"bearer " + token:                  200,
		"BEARER " + token:                  200,
		"bEaReR " + token:                  200,
		"Bearer   " + token:                200,
		"Bearer " + strings.ToLower(token): 401,
		"Bearer " + token[:len(token)-1]:   401,
		"Bearer " + token + "x":            401,
		"Bearer":                           401,
		"Bearer ":                          401,
		"Basic " + token:                   401,
		"Bearer" + token:                   401,
		token:                              401,
		"":                                 401,
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/admin/chunks", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", header, resp.StatusCode, want)
		}
	}
}

// TestTokenCompareSeesFixedSizes: whatever length the caller sends and
// whatever the token's length, both sides of the constant-time compare
// are 32 bytes, so its early return on a length mismatch never happens and
// cannot reveal the token's length.
func TestTokenCompareSeesFixedSizes(t *testing.T) {
	for _, tokenLen := range []int{1, 16, 32, 33, 4096} {
		want := len(tokenDigest([]byte(strings.Repeat("t", tokenLen))))
		for _, sent := range []int{1, 15, 32, 64, 4097} {
			got, ok := bearerDigest("Bearer " + strings.Repeat("x", sent))
			if !ok || len(got) != want || want != 32 {
				t.Fatalf("token %d bytes, sent %d bytes: compare sides %d and %d bytes", tokenLen, sent, len(got), want)
			}
		}
	}
}

// TestUnauthorizedSaysMissingOrMismatch: a 401 says whether no bearer
// token came or one came that is not the daemon's, in the body and in
// the WWW-Authenticate challenge (RFC 6750 3.1), so a client can say what
// to fix; neither says anything of the token itself.
func TestUnauthorizedSaysMissingOrMismatch(t *testing.T) {
	const token = "s3cret-Token"
	srv, _ := newTestServer(t, token)
	for header, want := range map[string]string{
		"":                                 ReasonTokenMissing,
		"Bearer":                           ReasonTokenMissing,
		"Bearer   ":                        ReasonTokenMissing,
		"Basic " + token:                   ReasonTokenMissing,
		"Bearer wrong":                     ReasonTokenMismatch,
		"Bearer " + strings.ToLower(token): ReasonTokenMismatch,
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/admin/batches/b1", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 401 || body.Error != want {
			t.Errorf("Authorization %q: %d %q (%v), want 401 %q", header, resp.StatusCode, body.Error, err, want)
		}
		challenge := resp.Header.Get("WWW-Authenticate")
		if invalid := strings.Contains(challenge, `error="invalid_token"`); !strings.HasPrefix(challenge, `Bearer realm="batchhook"`) ||
			invalid != (want == ReasonTokenMismatch) {
			t.Errorf("Authorization %q: WWW-Authenticate %q", header, challenge)
		}
	}
}

// TestEveryReplyNamesTheAdminAPI: every reply, errors and unknown paths
// included, carries the header by which the CLI tells the admin API from
// another listener (the webhook's 404 has the same JSON shape).
func TestEveryReplyNamesTheAdminAPI(t *testing.T) {
	srv, _ := newTestServer(t, "tok")
	for _, r := range []struct {
		method, path string
		auth         bool
		want         int
	}{
		{"GET", "/healthz", false, 200},
		{"GET", "/admin/batches", true, 200},
		{"GET", "/admin/batches/nope", true, 404},
		{"GET", "/admin/nothing-here", true, 404},
		{"GET", "/webhooks/batch-completed", false, 404},
		{"GET", "/admin/batches/b1/refetch", true, 405},
		{"GET", "/admin/batches", false, 401},
	} {
		req, _ := http.NewRequest(r.method, srv.URL+r.path, nil)
		if r.auth {
			req.Header.Set("Authorization", "Bearer tok")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != r.want || resp.Header.Get(APIHeader) != APIName {
			t.Errorf("%s %s: %d with %s %q, want %d with %q", r.method, r.path, resp.StatusCode, APIHeader, resp.Header.Get(APIHeader), r.want, APIName)
		}
	}
}
