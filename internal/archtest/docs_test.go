package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEDocumentsEveryVariable: the configuration reference names every
// variable the daemon reads.
func TestREADMEDocumentsEveryVariable(t *testing.T) {
	doc := readme(t)
	for _, v := range config.Variables() {
		short := strings.TrimPrefix(v, config.Prefix+"_")
		if !strings.Contains(doc, "`"+short+"`") && !strings.Contains(doc, "`"+v+"`") {
			t.Errorf("README does not document %s", v)
		}
	}
}

// TestREADMEDocumentsEveryLogEvent: every event name the code logs is in
// README's log events table, so ops can alert on it.
func TestREADMEDocumentsEveryLogEvent(t *testing.T) {
	doc := readme(t)
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
			if !strings.Contains(doc, "`"+m[1]+"`") {
				t.Errorf("%s logs event %q, which README's log events table does not list", path, m[1])
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
	doc := readme(t)
	m := regexp.MustCompile("(?s)## Test\\s+```sh\\n([^\\n]+)\\n```").FindStringSubmatch(doc)
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

// TestREADMECodeFencesClose: every fenced block opens with ``` (and an
// optional language) and closes with a line that is ``` alone, and the
// sections that must render as prose are outside any block. A closing
// fence with text after it is not a closing fence in Markdown, so every
// later fence flips and the rest of the README renders as code.
func TestREADMECodeFencesClose(t *testing.T) {
	inside, open := false, 0
	headings := map[string]bool{}
	for i, line := range strings.Split(readme(t), "\n") {
		trimmed := strings.TrimRight(line, " \t")
		switch {
		case strings.HasPrefix(trimmed, "```") && !inside:
			if strings.ContainsAny(strings.TrimPrefix(trimmed, "```"), " `") {
				t.Errorf("README line %d: an opening fence with more than a language: %q", i+1, line)
			}
			inside, open = true, i+1
		case strings.HasPrefix(trimmed, "```") && inside:
			if trimmed != "```" {
				t.Errorf("README line %d: a closing fence with text after it: %q", i+1, line)
			}
			inside = false
		case !inside && strings.HasPrefix(line, "## "):
			headings[strings.TrimPrefix(line, "## ")] = true
		}
	}
	if inside {
		t.Errorf("README: the fence opened at line %d never closes", open)
	}
	for _, h := range []string{"Try it", "Test", "How it works", "Configuration", "Operating it", "Sinks", "Payments", "Personal data", "Log events"} {
		if !headings[h] {
			t.Errorf("README: section %q is missing or renders inside a code block", h)
		}
	}
}
