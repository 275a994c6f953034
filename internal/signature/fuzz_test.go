package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

// FuzzVerify: Verify never panics and accepts exactly one value, the one
// computed here independently of Sign.
func FuzzVerify(f *testing.F) {
	body, secret := []byte(`{"event":"batch.completed","batch_id":"b_1"}`), []byte("s ")
	good := independent(secret, body)
	f.Add(secret, body, good)
	f.Add(secret, body, good[:44])
	f.Add(secret, body, "sha256="+good)
	f.Add([]byte{}, []byte{}, "")
	f.Add([]byte("k"), []byte("\x00\xff"), "!!!!")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		want := independent(secret, body)
		got := Verify(secret, body, header)
		if (got == OK) != (header == want) {
			t.Fatalf("Verify(%q, %q, %q) = %q; the one correct value is %q", secret, body, header, got, want)
		}
		if Verify(secret, body, want) != OK {
			t.Fatal("the correct value is rejected")
		}
	})
}

func independent(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(m.Sum(nil))))
}
