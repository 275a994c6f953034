package httpsink

import (
	"bufio"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWHVerifyMatchesOpenSSLVectors pins the receiving side's verification
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
		key, err := DecodeSecret(secret)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := strconv.ParseInt(tsText, 10, 64)
		now := time.Unix(ts, 0).Add(time.Minute)
		h := func(id, ts, sig string) http.Header {
			return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig},
				"Content-Type": {"application/json"}}
		}
		if _, err := Verify(key, h(id, tsText, sig), body, now, VerifyTolerance); err != nil {
			t.Fatalf("vector %s: %v", id, err)
		}
		if _, err := Verify(key, h(id, tsText, "v1,bm9wZQ== "+sig), body, now, VerifyTolerance); err != nil {
			t.Fatalf("vector %s among several signatures: %v", id, err)
		}
		tampered := append([]byte(nil), body...)
		tampered[len(tampered)-2] ^= 1
		bad := map[string]func() error{
			"body":      func() error { _, err := Verify(key, h(id, tsText, sig), tampered, now, VerifyTolerance); return err },
			"id":        func() error { _, err := Verify(key, h(id+"x", tsText, sig), body, now, VerifyTolerance); return err },
			"timestamp": func() error { _, err := Verify(key, h(id, tsText+"0", sig), body, now, VerifyTolerance); return err },
			"version": func() error {
				_, err := Verify(key, h(id, tsText, "v2"+sig[2:]), body, now, VerifyTolerance)
				return err
			},
			"stale": func() error {
				_, err := Verify(key, h(id, tsText, sig), body, now.Add(VerifyTolerance), VerifyTolerance)
				return err
			},
			"key": func() error {
				_, err := Verify(append([]byte{0}, key...), h(id, tsText, sig), body, now, VerifyTolerance)
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
