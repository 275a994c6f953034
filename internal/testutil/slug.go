package testutil

import (
	"regexp"
	"strings"
	"unicode"
)

var mdLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// HeadingSlug is GitHub's anchor for a Markdown heading's text: a link
// kept as its text, code and emphasis marks dropped, lower case, every
// character but letters, digits, spaces, '-' and '_' dropped, spaces made
// '-'. The docs' link check and the alert rules' runbook check both use
// it, so the two agree on what an anchor is.
func HeadingSlug(text string) string {
	text = mdLink.ReplaceAllStringFunc(text, func(l string) string { return l[1:strings.Index(l, "](")] })
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
