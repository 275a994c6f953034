package main

import (
	"bufio"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWHVerifyMatchesOpenSSLVectors pins the demo receiver's verification
// to signatures computed by openssl (testdata/make-webhook-vectors.sh), one
// of them the Standard Webhooks specification's own example, and shows it
// refuses each thing an attacker could change.
func TestWHVerifyMatchesOpenSSLVectors(t *testing.T) {
	f, err := os.Open("testdata/webhook-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		v := strings.Split(sc.Text(), "\t")
		if len(v) != 5 {
			t.Fatalf("vector line %q", sc.Text())
		}
		n++
		secret, id, tsText, body, sig := v[0], v[1], v[2], []byte(v[3]), v[4]
		r, err := newWHReceiver(secret, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := strconv.ParseInt(tsText, 10, 64)
		now := time.Unix(ts, 0).Add(time.Minute)
		h := func(id, ts, sig string) http.Header {
			return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig},
				"Content-Type": {"application/json"}}
		}
		if _, err := whVerify(r.key, h(id, tsText, sig), body, now, whTolerance); err != nil {
			t.Fatalf("vector %s: %v", id, err)
		}
		if _, err := whVerify(r.key, h(id, tsText, "v1,bm9wZQ== "+sig), body, now, whTolerance); err != nil {
			t.Fatalf("vector %s among several signatures: %v", id, err)
		}
		tampered := append([]byte(nil), body...)
		tampered[len(tampered)-2] ^= 1
		bad := map[string]func() error{
			"body":      func() error { _, err := whVerify(r.key, h(id, tsText, sig), tampered, now, whTolerance); return err },
			"id":        func() error { _, err := whVerify(r.key, h(id+"x", tsText, sig), body, now, whTolerance); return err },
			"timestamp": func() error { _, err := whVerify(r.key, h(id, tsText+"0", sig), body, now, whTolerance); return err },
			"version": func() error {
				_, err := whVerify(r.key, h(id, tsText, "v2"+sig[2:]), body, now, whTolerance)
				return err
			},
			"stale": func() error {
				_, err := whVerify(r.key, h(id, tsText, sig), body, now.Add(whTolerance), whTolerance)
				return err
			},
			"key": func() error {
				_, err := whVerify(append([]byte{0}, r.key...), h(id, tsText, sig), body, now, whTolerance)
				return err
			},
		}
		for what, check := range bad {
			if check() == nil {
				t.Fatalf("vector %s: a changed %s still verifies", id, what)
			}
		}
	}
	if n < 2 {
		t.Fatalf("%d vectors read", n)
	}
}

// TestAssembleRefusesGapsAndChangedCopies: the checks the demo and the
// end-to-end tests lean on.
func TestAssembleRefusesGapsAndChangedCopies(t *testing.T) {
	part := func(k, n int, items string) []byte {
		return []byte(`{"type":"batch.exported","timestamp":"2026-01-01T00:00:00Z","data":{"batch_id":"b1","part":` +
			strconv.Itoa(k) + `,"parts":` + strconv.Itoa(n) + `,"manifest":{"batch_id":"b1"},"items":[` + items + `]}}`)
	}
	ok := func(id string, body []byte) whMessage { return whMessage{ID: id, Body: body, Status: 200} }
	d, err := assemble([]whMessage{ok("b1:1", part(1, 2, `{"a":1},{"a":2}`)), ok("b1:2", part(2, 2, `{"a":3}`)),
		ok("b1:1", part(1, 2, `{"a":1},{"a":2}`)), {ID: "b1:2", Body: part(2, 2, `{"z":0}`), Status: 500}}, "b1")
	if err != nil || string(d.Results) != "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n" || d.Parts != 2 || d.Items != 3 ||
		string(d.Manifest) != `{"batch_id":"b1"}` {
		t.Fatalf("assemble = %+v, %v", d, err)
	}
	for name, msgs := range map[string][]whMessage{
		"missing part": {ok("b1:2", part(2, 2, `{"a":3}`))},
		"changed copy": {ok("b1:1", part(1, 1, `{"a":1}`)), ok("b1:1", part(1, 1, `{"a":2}`))},
		"wrong id":     {ok("b1:r1:1", part(1, 1, `{"a":1}`))},
		"nothing":      {{ID: "b1:1", Body: part(1, 1, `{"a":1}`), Status: 401, Err: "bad signature"}},
	} {
		if _, err := assemble(msgs, "b1"); err == nil {
			t.Fatalf("%s: assembled", name)
		}
	}
}
