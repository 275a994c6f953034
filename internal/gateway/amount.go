package gateway

import (
	"errors"
	"regexp"
	"strings"
)

// Amount is a payment amount kept as the decimal text the operator gave:
// it is sent as a JSON number with exactly those digits, never through a
// float (10.10 must not become 10.1 or 10.099999). Build it with
// ParseAmount.
type Amount string

// amountText is a positive decimal with at most two places, written as a
// JSON number may be (no sign, no exponent, no leading zeros).
var amountText = regexp.MustCompile(`^(0|[1-9][0-9]{0,14})(\.[0-9]{1,2})?$`)

// ErrAmount is why ParseAmount refused a value.
var ErrAmount = errors.New("want a positive amount with at most two decimal places, as 10.50")

// ParseAmount accepts "10", "10.5" or "10.50" and refuses zero, a sign, an
// exponent, a comma, leading zeros and a third decimal.
func ParseAmount(s string) (Amount, error) {
	if !amountText.MatchString(s) || strings.Trim(s, "0.") == "" {
		return "", ErrAmount
	}
	return Amount(s), nil
}

// MarshalJSON writes the digits as a JSON number.
func (a Amount) MarshalJSON() ([]byte, error) {
	if !amountText.MatchString(string(a)) {
		return nil, ErrAmount
	}
	return []byte(a), nil
}
