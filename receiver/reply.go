package receiver

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// Replies written from bytes rather than through echo's c.JSON, which
// builds a json.Encoder and reflects over the value for every ack. The
// bytes are those c.JSON writes (compact JSON and a newline, Content-Type
// application/json); whenever they might not be (a query, where c.JSON
// honours ?pretty, echo's Debug mode, or text encoding/json would escape)
// the reply still goes through c.JSON. reply_test.go compares the two.

// writeReply answers code with {"result":result,"batch_id":batchID}.
func writeReply(c echo.Context, code int, result, batchID string) error {
	if !compactJSON(c) || !verbatim(result) || !verbatim(batchID) {
		return c.JSON(code, reply{result, batchID})
	}
	b := make([]byte, 0, len(`{"result":"","batch_id":""}`+"\n")+len(result)+len(batchID))
	b = append(b, `{"result":"`...)
	b = append(b, result...)
	b = append(b, `","batch_id":"`...)
	b = append(b, batchID...)
	b = append(b, "\"}\n"...)
	return c.Blob(code, echo.MIMEApplicationJSON, b)
}

// writePaymentReply answers code with {"result":result,"seq":seq}.
func writePaymentReply(c echo.Context, code int, result string, seq uint64) error {
	if !compactJSON(c) || !verbatim(result) {
		return c.JSON(code, paymentReply{result, seq})
	}
	b := make([]byte, 0, len(`{"result":"","seq":}`+"\n")+len(result)+20)
	b = append(b, `{"result":"`...)
	b = append(b, result...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, "}\n"...)
	return c.Blob(code, echo.MIMEApplicationJSON, b)
}

// fail answers code with {"error":reason}.
func fail(c echo.Context, code int, reason string) error {
	if !compactJSON(c) || !verbatim(reason) {
		return c.JSON(code, map[string]string{"error": reason})
	}
	b := make([]byte, 0, len(`{"error":""}`+"\n")+len(reason))
	b = append(b, `{"error":"`...)
	b = append(b, reason...)
	b = append(b, "\"}\n"...)
	return c.Blob(code, echo.MIMEApplicationJSON, b)
}

// compactJSON reports that c.JSON would write compact JSON: echo indents
// when the query has "pretty" or in Debug mode.
func compactJSON(c echo.Context) bool {
	return c.Request().URL.RawQuery == "" && !c.Echo().Debug
}

// verbatim reports that encoding/json writes s inside its quotes as it is:
// printable ASCII without a quote, a backslash or an HTML character (which
// it escapes). A batch_id (store.CheckBatchID) and the fixed reasons are.
func verbatim(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
