package httpsink

import (
	"encoding/base64"
	"errors"
	"strings"
)

// DecodeSecret turns a "whsec_<base64>" secret into key bytes, for the
// tests' own receivers and vectors. The daemon decodes (and validates) the
// configured secret once, in config.DecodeSinkSecret, and hands the sink
// the key: the sink itself never parses a secret.
func DecodeSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "whsec_")
	if !ok {
		return nil, errors.New("not whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, errors.New("not base64")
	}
	return key, nil
}
