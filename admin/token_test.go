package admin

import (
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
