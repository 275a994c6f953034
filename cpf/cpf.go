// Package cpf validates and normalises Brazilian CPF numbers for batch
// submission and masks them for messages. A CPF is personal data:
// Mask is the only form in which one may appear in output meant for people,
// and never in logs.
package cpf

import (
	"errors"
	"strings"
)

// Errors returned by Normalize.
var (
	// ErrFormat: not 11 digits, with or without the usual punctuation.
	ErrFormat = errors.New("not a CPF: want 11 digits, as 12345678909 or 123.456.789-09")
	// ErrRepeated: all 11 digits equal; their check digits add up, but no
	// such CPF is issued.
	ErrRepeated = errors.New("all digits repeated")
	// ErrCheckDigits: the two check digits do not match the first nine.
	ErrCheckDigits = errors.New("check digits do not match")
)

// Normalize accepts "123.456.789-09" or "12345678909" (surrounding spaces
// ignored) and returns the 11 digits, or why the value is not a valid CPF.
func Normalize(s string) (string, error) {
	s = strings.TrimSpace(s)
	var digits string
	switch {
	case len(s) == 11:
		digits = s
	case len(s) == 14 && s[3] == '.' && s[7] == '.' && s[11] == '-':
		digits = s[:3] + s[4:7] + s[8:11] + s[12:]
	default:
		return "", ErrFormat
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", ErrFormat
		}
	}
	if strings.Count(digits, digits[:1]) == 11 {
		return "", ErrRepeated
	}
	if checkDigit(digits[:9]) != digits[9] || checkDigit(digits[:10]) != digits[10] {
		return "", ErrCheckDigits
	}
	return digits, nil
}

// CheckDigits returns the two check digits that complete a 9-digit base
// (the simulator uses it to make valid sample CPFs). It panics if base is
// not 9 ASCII digits: callers build the base themselves.
func CheckDigits(base string) string {
	if len(base) != 9 || !isDigits(base) {
		panic("cpf: CheckDigits wants 9 digits")
	}
	d1 := checkDigit(base)
	return string([]byte{d1, checkDigit(base + string(d1))})
}

// checkDigit is the mod-11 rule: weights n+1 down to 2 over the n digits
// so far; a remainder of 10 gives 0.
func checkDigit(digits string) byte {
	sum := 0
	for i := 0; i < len(digits); i++ {
		sum += int(digits[i]-'0') * (len(digits) + 1 - i)
	}
	r := sum * 10 % 11
	if r == 10 {
		r = 0
	}
	return byte('0' + r)
}

// Mask hides the first three and the last two digits of an input line, so
// an operator can find the line without the number being disclosed:
// "123.456.789-09" → "***.456.789-**". Anything that is not shaped like a
// CPF is masked whole.
func Mask(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case len(s) == 11 && isDigits(s):
		return "***." + s[3:6] + "." + s[6:9] + "-**"
	case len(s) == 14 && s[3] == '.' && s[7] == '.' && s[11] == '-':
		return "***" + s[3:12] + "**"
	default:
		return strings.Repeat("*", min(len(s), 14))
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
