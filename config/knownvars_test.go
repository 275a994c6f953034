package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestEveryNameTheConfigPackageUsesIsKnown: every Var("NAME") in the config
// package (the client, gateway and daemon loaders, and their messages)
// names a variable KnownVariables has, so no variable batchhook reads is
// ever warned as unknown_variable.
func TestEveryNameTheConfigPackageUsesIsKnown(t *testing.T) {
	known := config.KnownVariables()
	files, _ := filepath.Glob("*.go")
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
			call, ok := nd.(*ast.CallExpr)
			if id, isID := func() (*ast.Ident, bool) {
				if !ok {
					return nil, false
				}
				id, isID := call.Fun.(*ast.Ident)
				return id, isID
			}(); !isID || id.Name != "Var" || len(call.Args) != 1 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				return true // Var(name + "_FILE") and the like: the loops over known names
			}
			name, _ := strconv.Unquote(lit.Value)
			n++
			if !slices.Contains(known, config.Var(name)) {
				t.Errorf("%s: Var(%q) is not among the known variables", fset.Position(lit.Pos()), name)
			}
			return true
		})
	}
	if n < 40 {
		t.Fatalf("found only %d Var calls", n)
	}
}
