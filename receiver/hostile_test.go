package receiver

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
)

// TestHostileInputs: each row is sent to the real server on loopback with a
// real store. The reply must be the expected one, nothing may be recorded as
// a batch, a quarantine entry may appear only for a validly signed body, and
// the server must still accept a genuine delivery afterwards.
func TestHostileInputs(t *testing.T) {
	e := start(t, nil)
	valid := body("b_valid", "completed")
	good := signature.Sign([]byte(testSecret), valid)
	hexUpper := func() string { // the right digest, its hex uppercased before Base64
		raw, _ := base64.StdEncoding.DecodeString(good)
		return base64.StdEncoding.EncodeToString(bytes.ToUpper(raw))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(valid)
	zw.Close()
	nested := []byte(`{"event":"batch.completed","batch_id":"b_n","status":"completed","x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`)
	withID := func(id string) []byte {
		return []byte(fmt.Sprintf(`{"event":"batch.completed","batch_id":"%s","status":"completed","total_requested":1,"total_found":1,"total_not_found":0}`, id))
	}
	withCounter := func(v string) []byte {
		return []byte(`{"event":"batch.completed","batch_id":"b_c","status":"completed","total_requested":` + v + `,"total_found":0,"total_not_found":0}`)
	}
	type row struct {
		name     string
		body     []byte
		sig      string // "" = sign the body correctly; "-" = no header
		headers  map[string]string
		want     int
		id       string // a batch id that must not be recorded
		quarantn bool   // a quarantine entry is expected
	}
	rows := []row{
		{name: "missing signature", body: valid, sig: "-", want: 401, id: "b_valid"},
		{name: "empty signature", body: valid, sig: " ", want: 401, id: "b_valid"},
		{name: "44-character signature", body: valid, sig: good[:44], want: 401, id: "b_valid"},
		{name: "sha256= prefix", body: valid, sig: "sha256=" + good, want: 401, id: "b_valid"},
		{name: "uppercase hex", body: valid, sig: hexUpper(), want: 401, id: "b_valid"},
		{name: "truncated signature", body: valid, sig: good[:87], want: 401, id: "b_valid"},
		{name: "over-long signature", body: valid, sig: good + "AAAA", want: 401, id: "b_valid"},
		{name: "non-Base64 signature", body: valid, sig: strings.Repeat("*", 88), want: 401, id: "b_valid"},
		{name: "body altered by one byte", body: bytes.Replace(valid, []byte("b_valid"), []byte("b_valie"), 1), sig: good, want: 401, id: "b_valie"},
		{name: "empty body", body: []byte{}, want: 400, quarantn: true},
		{name: "huge body", body: bytes.Repeat([]byte("x"), 8192), want: 413},
		{name: "gzip-encoded", body: gz.Bytes(), headers: map[string]string{"Content-Encoding": "gzip"}, want: 415, id: "b_valid"},
		{name: "duplicate keys", body: []byte(`{"event":"batch.completed","batch_id":"b_d","batch_id":"b_e","status":"completed"}`), want: 400, id: "b_d", quarantn: true},
		{name: "byte order mark", body: append([]byte("\xef\xbb\xbf"), withID("b_bom")...), want: 400, id: "b_bom", quarantn: true},
		{name: "deeply nested", body: nested, want: 400, id: "b_n", quarantn: true},
		{name: "batch_id ..", body: withID(".."), want: 400, id: "..", quarantn: true},
		{name: "batch_id with /", body: withID("a/b"), want: 400, id: "a/b", quarantn: true},
		{name: "batch_id with backslash", body: withID(`a\\b`), want: 400, id: `a\b`, quarantn: true},
		{name: "batch_id with NUL", body: withID(`a\u0000b`), want: 400, id: "a\x00b", quarantn: true},
		{name: "batch_id look-alike slash", body: withID("a\u2215b"), want: 400, id: "a\u2215b", quarantn: true},
		{name: "batch_id of 129 characters", body: withID(strings.Repeat("a", 129)), want: 400, id: strings.Repeat("a", 129), quarantn: true},
		{name: "counter negative", body: withCounter("-1"), want: 400, id: "b_c", quarantn: true},
		{name: "counter not an integer", body: withCounter("1.5"), want: 400, id: "b_c", quarantn: true},
		{name: "counter overflowing", body: withCounter("99999999999999999999"), want: 400, id: "b_c", quarantn: true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			before, _ := e.store.CountQuarantined()
			h := map[string]string{}
			switch r.sig {
			case "":
				h[signature.Header] = signature.Sign([]byte(testSecret), r.body)
			case "-":
			default:
				h[signature.Header] = r.sig
			}
			for k, v := range r.headers {
				h[k] = v
			}
			res := e.post(t, testPath, r.body, h)
			if res.code != r.want {
				t.Fatalf("reply %d %v, want %d", res.code, res.body, r.want)
			}
			if r.id != "" {
				if known, _ := e.store.Known(r.id); known {
					t.Fatalf("%q was recorded", r.id)
				}
			}
			after, _ := e.store.CountQuarantined()
			if got := after - before; (got == 1) != r.quarantn || got > 1 {
				t.Fatalf("%d quarantine entries added, want quarantine=%v", got, r.quarantn)
			}
		})
	}
	// A completed_at that does not parse is accepted and flagged, not lost.
	flagged := []byte(`{"event":"batch.completed","batch_id":"b_date","status":"completed","total_requested":1,"total_found":1,"total_not_found":0,"completed_at":"yesterday"}`)
	if res := e.post(t, testPath, flagged, signed(flagged)); res.code != 200 {
		t.Fatalf("malformed completed_at: %d, want 200 with a flag", res.code)
	}
	if b, _ := e.store.Get("b_date"); b == nil || len(b.Notification.Flags) == 0 {
		t.Fatal("malformed completed_at was not flagged")
	}
	// Still serving.
	if res := e.post(t, testPath, valid, signed(valid)); res.code != 200 || res.body["result"] != "accepted" {
		t.Fatalf("genuine delivery after the hostile rows: %d %v", res.code, res.body)
	}
}

// TestManyIdleConnections: hundreds of idle connections do not stop the
// server from answering, and the idle timeout closes them.
func TestManyIdleConnections(t *testing.T) {
	e := startWithLimits(t, nil, Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		WriteTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 4096})
	addr := strings.TrimPrefix(e.url, "http://")
	var conns []net.Conn
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	b := body("b_idle", "completed")
	if res := e.post(t, testPath, b, signed(b)); res.code != 200 {
		t.Fatalf("with 300 idle connections: %d", res.code)
	}
	// The server hangs up on connections that never send a request.
	conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := conns[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("an idle connection got data")
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("idle connection held for %s", time.Since(start))
	}
}
