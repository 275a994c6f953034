package archtest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// doc returns the text of a file of the repository, named by its path
// from the root ("README.md", "docs/configuration.md").
func doc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readme(t *testing.T) string { t.Helper(); return doc(t, "README.md") }

// docPages returns the repository paths of README.md and every page under
// docs/, README first.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	// README first (the shell test reads the pages after it), then the
	// other pages at the root a newcomer opens.
	out := []string{"README.md", "CHANGELOG.md", "SECURITY.md"}
	for _, p := range pages {
		out = append(out, "docs/"+filepath.Base(p))
	}
	if len(out) < 10 {
		t.Fatalf("found only %d documentation pages", len(out))
	}
	return out
}

// TestConfigurationDocumentsEveryVariable: the configuration reference,
// docs/configuration.md, names every variable the daemon reads.
func TestConfigurationDocumentsEveryVariable(t *testing.T) {
	page := doc(t, "docs/configuration.md")
	for _, v := range config.Variables() {
		short := strings.TrimPrefix(v, config.Prefix+"_")
		if !strings.Contains(page, "`"+short+"`") && !strings.Contains(page, "`"+v+"`") {
			t.Errorf("docs/configuration.md does not document %s", v)
		}
	}
}

// TestLogEventsDocumentsEveryLogEvent: every event name the code logs is in
// the log events table, docs/log-events.md, so ops can alert on it.
func TestLogEventsDocumentsEveryLogEvent(t *testing.T) {
	page := doc(t, "docs/log-events.md")
	re := regexp.MustCompile(`Str\("event", "([a-z_]+)"\)`)
	found := 0
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "lookupsim" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found++
			if !strings.Contains(page, "`"+m[1]+"`") {
				t.Errorf("%s logs event %q, which docs/log-events.md does not list", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found only %d event names; the pattern no longer matches the code", found)
	}
}

// TestCIRunsTheREADMETestCommand: .ci/run runs exactly the command README
// gives newcomers.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	m := regexp.MustCompile("(?s)## Test\\s+```sh\\n([^\\n]+)\\n```").FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("README has no test command under \"## Test\"")
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(line) == m[1] {
			found = true
		}
	}
	if !found {
		t.Fatalf(".ci/run does not run the README's test command %q", m[1])
	}
}

// TestDocsCodeFencesClose: in README.md and every page under docs/, every
// fenced block opens with ``` (and an optional language) and closes with a
// line that is ``` alone, and the sections that must render as prose are
// outside any block. A closing fence with text after it is not a closing
// fence in Markdown, so every later fence flips and the rest of the page
// renders as code.
func TestDocsCodeFencesClose(t *testing.T) {
	for _, page := range docPages(t) {
		want := []string{"# "} // every page has its title
		if page == "README.md" {
			want = append(want, "## Try it", "## Install", "## Test", "## How it works", "## Documentation")
		}
		for _, p := range fenceProblems(page, doc(t, page), want) {
			t.Error(p)
		}
	}
}

// fenceProblems lists the fences of text that do not close, and the
// headings of want (by their prefix, "## Test") that are missing or inside
// a block.
func fenceProblems(page, text string, want []string) []string {
	var problems []string
	inside, open := false, 0
	var headings []string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimRight(line, " \t")
		switch {
		case strings.HasPrefix(trimmed, "```") && !inside:
			if strings.ContainsAny(strings.TrimPrefix(trimmed, "```"), " `") {
				problems = append(problems, fmt.Sprintf("%s line %d: an opening fence with more than a language: %q", page, i+1, line))
			}
			inside, open = true, i+1
		case strings.HasPrefix(trimmed, "```") && inside:
			if trimmed != "```" {
				problems = append(problems, fmt.Sprintf("%s line %d: a closing fence with text after it: %q", page, i+1, line))
			}
			inside = false
		case !inside && strings.HasPrefix(line, "#"):
			headings = append(headings, line)
		}
	}
	if inside {
		problems = append(problems, fmt.Sprintf("%s: the fence opened at line %d never closes", page, open))
	}
	for _, w := range want {
		found := false
		for _, h := range headings {
			if h == w || (w == "# " && strings.HasPrefix(h, w)) {
				found = true
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: heading %q is missing or renders inside a code block", page, w))
		}
	}
	return problems
}

// TestFenceProblemsCatchesABrokenFence: the check fails on a fence closed
// with text after it, a fence left open, a heading inside a block and a
// page without a title.
func TestFenceProblemsCatchesABrokenFence(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"# T\n```sh\necho\n``` trailing\n## Test\n```\n", "closing fence with text after it"},
		{"# T\n```sh\necho\n``` trailing\n## Test\n```\n", "never closes"},
		{"# T\n```\n## Test\n```\n", `"## Test" is missing`},
		{"## Test\n", `"# " is missing`},
	} {
		got := strings.Join(fenceProblems("x.md", tc.text, []string{"# ", "## Test"}), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: problems %q, want %q", tc.text, got, tc.want)
		}
	}
}
