package signature

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vectors were computed with openssl (testdata/README.md), never by Sign.
var vectors = []struct {
	body, secret     string
	good, raw, upper string
}{
	{
		body: "body1.json", secret: "secret1.txt",
		good:  "MTM0MjUzZDYwZGI3OGRmYTRiMjE1OTk1YmY1YjlhMTE3MzY3MTc1MDRjMWQ4OGI2MTdlYjEwYjJmOGY0ZGI2Yg==",
		raw:   "E0JT1g23jfpLIVmVv1uaEXNnF1BMHYi2F+sQsvj022s=",
		upper: "MTM0MjUzRDYwREI3OERGQTRCMjE1OTk1QkY1QjlBMTE3MzY3MTc1MDRDMUQ4OEI2MTdFQjEwQjJGOEY0REI2Qg==",
	},
	{
		body: "body2.json", secret: "secret2.txt",
		good:  "NTNhNmNjMDM0NDEzZjE0MGI2NmFiOTlmZTI5OTYxOWFhNTY4MGU0NDFkYjMyN2Q0YmZkMWQyOThhZGE4ZDE1Yg==",
		raw:   "U6bMA0QT8UC2armf4plhmqVoDkQdsyfUv9HSmK2o0Vs=",
		upper: "NTNBNkNDMDM0NDEzRjE0MEI2NkFCOTlGRTI5OTYxOUFBNTY4MEU0NDFEQjMyN0Q0QkZEMUQyOThBREE4RDE1Qg==",
	},
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignMatchesOpenSSL(t *testing.T) {
	for _, v := range vectors {
		body, secret := read(t, v.body), read(t, v.secret)
		if got := Sign(secret, body); got != v.good {
			t.Errorf("%s: Sign = %s, want %s", v.body, got, v.good)
		}
		if len(v.good) != Length {
			t.Fatalf("vector length %d, want %d", len(v.good), Length)
		}
	}
}

func TestVerify(t *testing.T) {
	v := vectors[0]
	body, secret := read(t, v.body), read(t, v.secret)
	flipped := append([]byte(nil), body...)
	flipped[10] ^= 1
	cases := []struct {
		name   string
		secret []byte
		body   []byte
		header string
		want   Reason
	}{
		{"valid", secret, body, v.good, OK},
		{"missing", secret, body, "", Missing},
		{"raw digest (44 chars)", secret, body, v.raw, RawDigest},
		{"sha256= prefix", secret, body, "sha256=" + v.good, Prefixed},
		{"SHA256= prefix", secret, body, "SHA256=" + v.good, Prefixed},
		{"uppercase hex", secret, body, v.upper, UppercaseHex},
		{"truncated", secret, body, v.good[:87], WrongLength},
		{"over-long", secret, body, v.good + "=", WrongLength},
		{"not base64", secret, body, strings.Repeat("!", Length), NotBase64},
		{"body altered by one byte", secret, flipped, v.good, Mismatch},
		{"secret without its trailing space", []byte(strings.TrimRight(string(secret), " ")), body, v.good, Mismatch},
		{"other vector's signature", secret, body, vectors[1].good, Mismatch},
		{"hex of a different length", secret, body, "YWJj" + v.good[4:], Mismatch},
	}
	for _, c := range cases {
		if got := Verify(c.secret, c.body, c.header); got != c.want {
			t.Errorf("%s: Verify = %q, want %q", c.name, got, c.want)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	body := []byte(`{"event":"batch.completed","batch_id":"b_0123456789abcdef0123","status":"completed","total_requested":1000,"total_found":900,"total_not_found":100,"completed_at":"2026-11-22T10:00:00Z"}`)
	secret := []byte("bench-secret")
	header := Sign(secret, body)
	b.ReportAllocs()
	for b.Loop() {
		if Verify(secret, body, header) != OK {
			b.Fatal("invalid")
		}
	}
}
