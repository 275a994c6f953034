package httpsink

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSignMatchesOpenSSL: Sign gives exactly the values openssl computed
// (testdata/make-vectors.sh), including the Standard Webhooks
// specification's own example.
func TestSignMatchesOpenSSL(t *testing.T) {
	f, err := os.Open("testdata/signatures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("vector line has %d fields: %q", len(fields), line)
		}
		key, err := DecodeSecret(fields[0])
		if err != nil {
			t.Fatalf("DecodeSecret(%q): %v", fields[0], err)
		}
		ts, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := Sign(key, fields[1], ts, []byte(fields[3])); got != fields[4] {
			t.Errorf("Sign(id %q, ts %d) = %s, openssl says %s", fields[1], ts, got, fields[4])
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("read %d vectors, want 4", n)
	}
}

func TestDecodeSecretRejects(t *testing.T) {
	for _, s := range []string{"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		key, err := DecodeSecret(s)
		if err == nil {
			t.Errorf("DecodeSecret(%q) = %x, want an error", s, key)
			continue
		}
		if rest := strings.TrimPrefix(s, "whsec_"); rest != "" && strings.Contains(err.Error(), rest) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

func TestMessageID(t *testing.T) {
	for _, tt := range []struct {
		version, part int
		want          string
	}{{0, 1, "b_1:1"}, {0, 12, "b_1:12"}, {1, 1, "b_1:r1:1"}, {2, 3, "b_1:r2:3"}} {
		if got := MessageID("b_1", tt.version, tt.part); got != tt.want {
			t.Errorf("MessageID(b_1, %d, %d) = %q, want %q", tt.version, tt.part, got, tt.want)
		}
	}
}
