package admin

// The admin API's front door.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestWrongMethodIs405WithAllow(t *testing.T) {
	srv, _ := newTestServer(t, "tok")
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/admin/batches/b1/refetch", "POST"},
		{"DELETE", "/admin/submissions", "GET, POST"},
		{"DELETE", "/admin/batches/b1", "GET"},
		{"PUT", "/admin/erasures", "GET, POST"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		allow := resp.Header.Get("Allow")
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(allow, "POST") && !strings.Contains(allow, "GET") {
			t.Errorf("%s %s: %d Allow %q, want 405 with the allowed methods", tc.method, tc.path, resp.StatusCode, allow)
		}
		for _, m := range strings.Split(tc.allow, ", ") {
			if m != "" && !strings.Contains(allow, m) {
				t.Errorf("%s %s: Allow %q lacks %s", tc.method, tc.path, allow, m)
			}
		}
	}
	if code, _ := call(t, "GET", srv.URL+"/admin/nowhere"); code != http.StatusNotFound {
		t.Errorf("an unknown path: %d, want 404", code)
	}
	if code, _ := call(t, "GET", srv.URL+"/admin/batches"); code != http.StatusUnauthorized {
		t.Errorf("a known route without the token: %d, want 401", code)
	}
}

// TestMessagesNameNoCLIFlag: the admin API is used by other clients than
// the CLI, so its messages name query parameters and variables, never a
// CLI flag ("--strict"). The messages of submit and store reach its
// replies too.
func TestMessagesNameNoCLIFlag(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../submit", "../store"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		files = append(files, m...)
	}
	flagLike := regexp.MustCompile(`(^|[\s(])--[a-z]`)
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(nd ast.Node) bool {
			if lit, ok := nd.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				n++
				if s, _ := strconv.Unquote(lit.Value); flagLike.MatchString(s) {
					t.Errorf("%s: message %q names a CLI flag", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
	}
	if n < 50 {
		t.Fatalf("read only %d string literals", n)
	}
}
