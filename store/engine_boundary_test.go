package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The nouns reach the storage engine (the engine_*.go files) through a
// narrow API only: the durable handle's Update, View, viewAt, mark and
// settled, and the group commit's write with its writeRes. This reads
// every product file that is neither an engine file nor store.go (which
// wires the two at Open) and fails on any other use of an engine name, on
// a bolt.Open, and on an import of os or syscall: files, locks, fsync and
// mappings are the engine's.
func TestNounsUseOnlyTheEngineAPI(t *testing.T) {
	dbAPI := map[string]bool{"Update": true, "View": true, "viewAt": true, "mark": true, "settled": true}
	groupAPI := map[string]bool{"write": true, "writeRes": true}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[f] = af
	}
	// The engine's own names: what its files declare, unexported, and its
	// unexported methods of Store.
	engine, methods := map[string]bool{}, map[string]bool{}
	for f, af := range parsed {
		if !strings.HasPrefix(f, "engine_") {
			continue
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case d.Recv == nil:
					engine[d.Name.Name] = true
				case strings.Contains(types(d.Recv), "Store"):
					methods[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						engine[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							engine[n.Name] = true
						}
					}
				}
			}
		}
	}
	for _, m := range []map[string]bool{engine, methods} {
		for name := range m {
			if ast.IsExported(name) || groupAPI[name] {
				delete(m, name)
			}
		}
	}
	if !methods["commitGroup"] || !engine["durableDB"] || !engine["lockFile"] {
		t.Fatalf("the engine's names were not found: %v %v", engine, methods)
	}

	for f, af := range parsed {
		if strings.HasPrefix(f, "engine_") || f == "store.go" {
			continue
		}
		for _, im := range af.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "os" || p == "syscall" {
				t.Errorf("%s imports %s: files and syscalls are the engine's", f, p)
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if inner, ok := n.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "db" && !dbAPI[n.Sel.Name] {
					t.Errorf("%s: db.%s is not the engine's API for the nouns", fset.Position(n.Pos()), n.Sel.Name)
				}
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "bolt" && n.Sel.Name == "Open" {
					t.Errorf("%s: bolt.Open outside the engine", fset.Position(n.Pos()))
				}
				if methods[n.Sel.Name] {
					t.Errorf("%s: %s is the engine's", fset.Position(n.Pos()), n.Sel.Name)
				}
				ast.Inspect(n.X, func(m ast.Node) bool { return inspectIdent(t, fset, engine, m) })
				return false
			default:
				return inspectIdent(t, fset, engine, n)
			}
		})
	}
}

func inspectIdent(t *testing.T, fset *token.FileSet, engine map[string]bool, n ast.Node) bool {
	if id, ok := n.(*ast.Ident); ok && engine[id.Name] {
		t.Errorf("%s: %s is the engine's", fset.Position(id.Pos()), id.Name)
	}
	return true
}

// types renders the types of a field list (a receiver) as text.
func types(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}
