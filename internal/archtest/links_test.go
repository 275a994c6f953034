package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/internal/testutil"
)

// The README is short and the reference lives under docs/, so a reader
// follows links from page to page. A link that names a missing file, or an
// #anchor that matches no heading, leaves the reader at the top of the
// wrong page; a link that climbs out of the repository points at nothing
// the reader has. These tests hold every relative link of README.md and
// docs/*.md to what is in the repository.

var (
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// mdLines returns the lines of a Markdown text outside fenced blocks, with
// their line numbers.
func mdLines(text string) (lines []string, numbers []int) {
	inside := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inside = !inside
			continue
		}
		if !inside {
			lines, numbers = append(lines, l), append(numbers, i+1)
		}
	}
	return lines, numbers
}

// anchors returns the anchors of a Markdown text's headings, with GitHub's
// "-1", "-2" suffixes for repeated ones.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := mdLines(text)
	for _, l := range lines {
		t := strings.TrimLeft(l, "#")
		if len(t) == len(l) || len(l)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		s := testutil.HeadingSlug(t)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// linkProblems checks every link of the pages (paths relative to root,
// with '/'): a relative target must be a file or directory inside root,
// and an #anchor must match a heading of the Markdown file it names.
// Links with a scheme (https:, mailto:) are not followed.
func linkProblems(root string, pages []string) []string {
	var problems []string
	texts := map[string]string{}
	read := func(rel string) (string, error) {
		if t, ok := texts[rel]; ok {
			return t, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		texts[rel] = string(b)
		return string(b), err
	}
	for _, page := range pages {
		text, err := read(page)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", page, err))
			continue
		}
		lines, numbers := mdLines(text)
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				where := fmt.Sprintf("%s line %d: link %q", page, numbers[i], target)
				file, anchor, _ := strings.Cut(target, "#")
				rel := page
				if file != "" {
					rel = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
					if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(file) {
						problems = append(problems, where+" points outside the repository")
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
						problems = append(problems, where+": no such file "+rel)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					problems = append(problems, where+": an anchor into a file that is not Markdown")
					continue
				}
				t, err := read(rel)
				if err != nil {
					problems = append(problems, where+": "+err.Error())
					continue
				}
				if !anchors(t)[anchor] {
					problems = append(problems, fmt.Sprintf("%s: %s has no heading #%s", where, rel, anchor))
				}
			}
		}
	}
	return problems
}

// TestDocsLinksResolve: every relative link and #anchor of README.md and
// docs/*.md names a file of the repository and, for an anchor, a heading
// of that page.
func TestDocsLinksResolve(t *testing.T) {
	pages := docPages(t)
	links := 0
	for _, p := range pages {
		lines, _ := mdLines(doc(t, p))
		for _, l := range lines {
			links += len(mdLink.FindAllString(codeSpan.ReplaceAllString(l, ""), -1))
		}
	}
	if links < 50 {
		t.Fatalf("found only %d links in the pages: the pattern no longer matches them", links)
	}
	for _, p := range linkProblems(filepath.Join("..", ".."), pages) {
		t.Error(p)
	}
}

// TestLinkProblemsCatchBrokenLinks: the check fails on a missing file, an
// anchor that matches no heading and a link out of the repository, and
// passes GitHub's slugs for headings with code, punctuation and repeats.
func TestLinkProblemsCatchBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/ops.md", "# Ops\n\n## When a write fails\n\n### Rehearsing the sandbox: `batchhook sandbox`\n\n"+
		"## Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## 10. What batchhook assumes (LGPD art. 18)\n")
	write("README.md", "# R\n\n"+
		"[ok](docs/ops.md#when-a-write-fails) [ok](docs/ops.md#rehearsing-the-sandbox-batchhook-sandbox) "+
		"[ok](docs/ops.md#notes-1) [ok](docs/ops.md#10-what-batchhook-assumes-lgpd-art-18) [ok](docs/) [ok](#r) "+
		"[ok](https://example.com/x#y) `[in code](nowhere.md)`\n"+
		"[bad](docs/missing.md)\n[bad](docs/ops.md#not-a-heading)\n[bad](../outside.md)\n[bad](#notes)\n"+
		"```sh\n[in a block](nowhere.md)\n```\n")
	write("docs/page.md", "# P\n\n[ok](../README.md#r) [ok](ops.md) [bad](../../x.md) [bad](ops.md#when-a-write-fails-1)\n")
	got := linkProblems(root, []string{"README.md", "docs/page.md"})
	want := []string{
		`README.md line 4: link "docs/missing.md": no such file docs/missing.md`,
		`README.md line 5: link "docs/ops.md#not-a-heading": docs/ops.md has no heading #not-a-heading`,
		`README.md line 6: link "../outside.md" points outside the repository`,
		`README.md line 7: link "#notes": README.md has no heading #notes`,
		`docs/page.md line 3: link "../../x.md" points outside the repository`,
		`docs/page.md line 3: link "ops.md#when-a-write-fails-1": docs/ops.md has no heading #when-a-write-fails-1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// outsideRef matches the references a reader of the repository cannot
// follow: an issue number, or a section of the provider's own document
// instead of a link into docs/provider-api.md.
var outsideRef = regexp.MustCompile(`(?i)\bissues? #?\d+|provider'?s? document,? §`)

// TestDocsPointNowhereOutside: README.md and docs/*.md say the thing
// itself, or link to a page of the repository, never "issue N".
func TestDocsPointNowhereOutside(t *testing.T) {
	for _, page := range docPages(t) {
		for i, l := range strings.Split(doc(t, page), "\n") {
			if m := outsideRef.FindString(l); m != "" {
				t.Errorf("%s line %d: %q points outside the repository: say the thing itself, or link into docs/", page, i+1, m)
			}
		}
	}
	for _, bad := range []string{"before issue 15", "(issue 13)", "the provider's document §2.1"} {
		if !outsideRef.MatchString(bad) {
			t.Errorf("outsideRef does not catch %q", bad)
		}
	}
}
