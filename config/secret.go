package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
)

// Secret holds a signing secret or API key. Its String method and every fmt
// verb print a redaction, so a Secret passed to a logger or an error by mistake
// does not leak.
type Secret []byte

// String returns a redaction, never the secret.
func (s Secret) String() string { return "[redacted]" }

// Format prints a redaction for every verb: %d or %x on a []byte would
// otherwise print the bytes.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// GoString returns a redaction, never the secret (for %#v).
func (s Secret) GoString() string { return "[redacted]" }

// MarshalText returns a redaction, never the secret (for JSON and logs).
func (s Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Fingerprint returns the first 8 hex characters of the secret's SHA-256:
// enough for an operator to tell two secrets apart in logs, useless for
// recovering either.
func (s Secret) Fingerprint() string {
	sum := sha256.Sum256(s)
	return hex.EncodeToString(sum[:4])
}

// loadSecret reads BATCHHOOK_<name> or the file named by BATCHHOOK_<name>_FILE.
// Setting both is an error. The value is used byte for byte (never
// trimmed); from a file, one final line ending (\n or \r\n) is dropped
// because editors add one.
func loadSecret(name, file string) (Secret, error) {
	value, set := os.LookupEnv(Var(name))
	if set && file != "" {
		return nil, fmt.Errorf("%s and %s: set only one of them", Var(name), Var(name+"_FILE"))
	}
	if file == "" {
		if !set {
			return nil, nil
		}
		return Secret(value), nil
	}
	s, err := ReadSecretFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Var(name+"_FILE"), err)
	}
	return s, nil
}

// ReadSecretFile reads a secret file with the one rule batchhook applies
// everywhere: the content byte for byte, minus one final "\n" or "\r\n".
// An empty result is an error.
func ReadSecretFile(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secret file: %w", err)
	}
	if bytes.HasSuffix(b, []byte("\r\n")) {
		b = b[:len(b)-2]
	} else if bytes.HasSuffix(b, []byte("\n")) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("secret file %s is empty", path)
	}
	return Secret(b), nil
}
