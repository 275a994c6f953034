package receiver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// recordReply runs write on a fresh echo context for a POST to target and
// returns what the client would receive.
func recordReply(t *testing.T, debug bool, target string, write func(echo.Context) error) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	e.Debug = debug
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, target, nil), rec)
	if err := write(c); err != nil {
		t.Fatal(err)
	}
	return rec
}

func sameResponse(t *testing.T, what string, got, want *httptest.ResponseRecorder) {
	t.Helper()
	if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Errorf("%s: got %d %q, c.JSON wrote %d %q", what, got.Code, got.Body.Bytes(), want.Code, want.Body.Bytes())
	}
	for k, v := range want.Header() {
		if g := got.Header()[k]; strings.Join(g, ",") != strings.Join(v, ",") {
			t.Errorf("%s: header %s = %q, c.JSON set %q", what, k, g, v)
		}
	}
	if len(got.Header()) != len(want.Header()) {
		t.Errorf("%s: headers %v, c.JSON set %v", what, got.Header(), want.Header())
	}
}

// TestRepliesAreWhatCJSONWrote: the replies written from bytes are, byte
// for byte and header for header, those echo's c.JSON wrote, and for the
// usual request they are encoding/json's encoding of the reply plus the
// newline its Encoder adds. Ids and reasons that encoding/json would escape,
// ?pretty and Debug mode take c.JSON's path and must agree too.
func TestRepliesAreWhatCJSONWrote(t *testing.T) {
	ids := []string{"b-1", "a", strings.Repeat("Z", 128), "ns:id.x_y-0", "01HF8Z6Q3V4X5Y6Z7A8B9C0D1E",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-",
		`a<b>&c`, `q"uote`, `back\slash`, "é", "\u2028", "\x7f", "\x01", "\xff", ""}
	reasons := []string{"body_too_large", "busy", "invalid_signature", "method_not_allowed", "storage_unavailable",
		"unreadable_body", "unsupported_content_encoding", "invalid notification: body is not JSON",
		`invalid notification: key "Batch_ID" appears more than once (exactly or up to case)`,
		"invalid notification: status \"<b>&\" is not one of completed", "ſ \x00 \xff"}
	for _, mode := range []struct {
		debug  bool
		target string
	}{{false, "/webhooks/batch"}, {false, "/webhooks/batch?pretty"}, {false, "/webhooks/batch?a=1"}, {true, "/webhooks/batch"}} {
		plain := !mode.debug && !strings.Contains(mode.target, "?")
		for _, result := range []string{ResultAccepted, ResultDuplicate, ResultIgnored} {
			for _, id := range ids {
				got := recordReply(t, mode.debug, mode.target, func(c echo.Context) error { return writeReply(c, http.StatusOK, result, id) })
				want := recordReply(t, mode.debug, mode.target, func(c echo.Context) error { return c.JSON(http.StatusOK, reply{result, id}) })
				sameResponse(t, mode.target+" "+result+" "+id, got, want)
				if plain {
					enc, err := json.Marshal(reply{result, id})
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got.Body.Bytes(), append(enc, '\n')) {
						t.Errorf("reply %q, encoding/json %q", got.Body.Bytes(), enc)
					}
				}
			}
		}
		for _, result := range []string{ResultAccepted, ResultDuplicate, `a<b`} {
			for _, seq := range []uint64{0, 1, 42, 1<<53 + 1, ^uint64(0)} {
				got := recordReply(t, mode.debug, mode.target, func(c echo.Context) error { return writePaymentReply(c, http.StatusOK, result, seq) })
				want := recordReply(t, mode.debug, mode.target, func(c echo.Context) error { return c.JSON(http.StatusOK, paymentReply{result, seq}) })
				sameResponse(t, mode.target+" payment "+result, got, want)
			}
		}
		for _, reason := range reasons {
			for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable} {
				got := recordReply(t, mode.debug, mode.target, func(c echo.Context) error { return fail(c, code, reason) })
				want := recordReply(t, mode.debug, mode.target, func(c echo.Context) error {
					return c.JSON(code, map[string]string{"error": reason})
				})
				sameResponse(t, mode.target+" "+reason, got, want)
			}
		}
	}
}
