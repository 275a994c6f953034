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
