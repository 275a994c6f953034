package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
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

// MaxSecretBytes caps a secret file: a key, a secret or a token is a few
// dozen bytes, and a path pointing at something else (a log, /dev/zero)
// must fail at once instead of growing memory.
const MaxSecretBytes = 4 << 10

// loadSecret reads BATCHHOOK_<name> (through lookup) or the file named by
// BATCHHOOK_<name>_FILE.
// Setting both is an error. The value is used byte for byte (never
// trimmed); from a file, one final line ending (\n or \r\n) is dropped
// because editors add one. A file that group or others can read adds a
// Warning to warns (when warns is not nil).
func loadSecret(lookup func(string) (string, bool), name, file string, warns *[]Warning) (Secret, error) {
	value, set := lookup(Var(name))
	if set && file != "" {
		return nil, fmt.Errorf("%s and %s: set only one of them", Var(name), Var(name+"_FILE"))
	}
	if file == "" {
		if !set {
			return nil, nil
		}
		if isPlaceholder(Secret(value)) {
			return nil, fmt.Errorf("%s: %w", Var(name), errPlaceholder)
		}
		if warns != nil && endsWithSpace(value) {
			*warns = append(*warns, Warning{Event: "secret_whitespace", Variable: Var(name),
				Message: "the value ends with whitespace, which is part of the secret (it is used byte for byte); remove it unless the provider's secret has it"})
		}
		return Secret(value), nil
	}
	s, mode, err := ReadSecretFileMode(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Var(name+"_FILE"), err)
	}
	if w := SecretFileWarning(name, file, mode); w != nil && warns != nil {
		*warns = append(*warns, *w)
	}
	if warns != nil && endsWithSpace(string(s)) {
		*warns = append(*warns, Warning{Event: "secret_whitespace", Variable: Var(name + "_FILE"), Path: file, Mode: mode,
			Message: "the file ends with more than one line ending or with whitespace; only one final line ending is dropped, the rest is part of the secret"})
	}
	return s, nil
}

// endsWithSpace reports whether a secret ends with a blank or a line
// ending: almost always a copy-and-paste slip, and it changes the secret.
func endsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\r\n\v\f", rune(s[len(s)-1]))
}

// ReadSecretFile reads a secret file with the one rule batchhook applies
// everywhere: the content byte for byte, minus one final "\n" or "\r\n".
// An empty result is an error, and so is a file larger than
// MaxSecretBytes or one that is not a regular file (a FIFO or a device
// would block or never end).
func ReadSecretFile(path string) (Secret, error) {
	s, _, err := ReadSecretFileMode(path)
	return s, err
}

// ReadSecretFileMode is ReadSecretFile that also returns the file's
// permission bits, for SecretFileWarning.
func ReadSecretFileMode(path string) (Secret, fs.FileMode, error) {
	// O_NONBLOCK: opening a FIFO without a writer would otherwise block
	// for ever; it changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read secret file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("read secret file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("secret file %s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	// Read one byte past the cap, so that a file that grew after Stat is
	// still caught.
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read secret file: %w", err)
	}
	if len(b) > MaxSecretBytes {
		return nil, 0, fmt.Errorf("secret file %s is larger than %d bytes: it does not hold a secret", path, MaxSecretBytes)
	}
	if bytes.HasSuffix(b, []byte("\r\n")) {
		b = b[:len(b)-2]
	} else if bytes.HasSuffix(b, []byte("\n")) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return nil, 0, fmt.Errorf("secret file %s is empty", path)
	}
	if isPlaceholder(b) {
		return nil, 0, fmt.Errorf("secret file %s: %w", path, errPlaceholder)
	}
	return Secret(b), st.Mode().Perm(), nil
}

// PlaceholderPrefix starts every secret value in the example manifests
// (deploy/kubernetes/secret.yaml). A Secret applied as shipped would
// otherwise start a daemon that answers every genuine delivery 401 and
// whose API key the provider refuses, with nothing saying why.
const PlaceholderPrefix = "replace-with-"

// errPlaceholder says what to do; it never repeats the value.
var errPlaceholder = errors.New("still the example's placeholder (it starts with \"" + PlaceholderPrefix +
	"\"): put the real value in the Secret or file")

func isPlaceholder(s Secret) bool { return bytes.HasPrefix(s, []byte(PlaceholderPrefix)) }

// SecretFileWarning returns a warning when group or others can read the
// secret file of BATCHHOOK_<name>_FILE (mode from ReadSecretFileMode),
// else nil. It is a warning, not an error: a group that holds only the
// service user is a valid set-up, but usually the file should be 0600 or
// 0400.
func SecretFileWarning(name, path string, mode fs.FileMode) *Warning {
	if mode&0o044 == 0 {
		return nil
	}
	return &Warning{Event: "secret_file_readable", Variable: Var(name + "_FILE"), Path: path, Mode: mode,
		Message: "the secret file is readable by group or others; chmod 0600 it"}
}

// fileKind names a non-regular file's type for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
