package cli

// Small formats the tables share.

import (
	"fmt"
	"strings"
	"time"
)

// orDash shows an empty value as "-" in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timeOrDash shows a zero time (nothing recorded yet) as "-" in a table,
// never as 0001-01-01T00:00:00Z.
func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine is s on one line, cut after max bytes.
func oneLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// plural writes n with the singular or plural noun: "1 CPF", "3 CPFs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
