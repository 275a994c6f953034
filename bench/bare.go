package bench

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/batchhook/batchhook/internal/signature"
)

// Bare is the baseline handler: echo, the same body cap, the signature
// verified, 200 with the same reply shape, and no storage at all. The
// daemon's figures are stated as ratios to it.
func Bare(secret []byte, path string, maxBody int64) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST(path, func(c echo.Context) error {
		body, err := readCapped(c.Request(), c.Response(), maxBody)
		if err != nil {
			return c.JSON(http.StatusRequestEntityTooLarge, map[string]string{"error": "body_too_large"})
		}
		if signature.Verify(secret, body, c.Request().Header.Get(signature.Header)) != signature.OK {
			return c.JSON(http.StatusUnauthorized, map[string]string{"error": "invalid_signature"})
		}
		return c.JSON(http.StatusOK, map[string]string{"result": "accepted"})
	})
	return e
}

func readCapped(r *http.Request, w http.ResponseWriter, max int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}
