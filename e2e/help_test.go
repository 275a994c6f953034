package e2e

// Every command's --help: exit 0, and every flag the command defines is
// listed. The commands and their flags are read from the source (cli's
// table of commands and each command's flag definitions), so a new command
// or flag is covered without editing this test.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// flagMethods are the flag.FlagSet methods that define a flag, with the
// position of the name among their arguments.
var flagMethods = map[string]int{"String": 0, "Bool": 0, "Int": 0, "Int64": 0, "Uint": 0, "Uint64": 0, "Duration": 0,
	"Float64": 0, "Func": 0, "BoolFunc": 0, "TextVar": 1, "StringVar": 1, "BoolVar": 1, "IntVar": 1, "Int64Var": 1,
	"UintVar": 1, "Uint64Var": 1, "DurationVar": 1, "Float64Var": 1, "Var": 1}

// sourceCommands maps each command of the CLI's table (cli/commands.go) to
// the flags defined in its run func and in the functions it calls, in the
// packages the commands live in (cli, demo, and cmd/batchhook for serve).
func sourceCommands(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	// funcs are keyed "name" in cli and cmd/batchhook, "demo.name" in demo.
	funcs := map[string]*ast.FuncDecl{}
	prefixOf := map[*ast.FuncDecl]string{}
	var table *ast.FuncDecl
	for dir, prefix := range map[string]string{"../cli": "", "../cmd/batchhook": "", "../demo": "demo."} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					funcs[prefix+fd.Name.Name] = fd
					prefixOf[fd] = prefix
					if dir == "../cli" && fd.Name.Name == "commands" {
						table = fd
					}
				}
			}
		}
	}
	var flagsOf func(key string, seen map[string]bool) []string
	flagsOf = func(key string, seen map[string]bool) []string {
		fd := funcs[key]
		// Run, dispatch and commandHelp reach every command (completion
		// runs their help): their flags are not the caller's.
		if fd == nil || seen[key] || key == "Run" || key == "dispatch" || key == "commandHelp" {
			return nil
		}
		seen[key] = true
		var out []string
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				out = append(out, flagsOf(prefixOf[fd]+fn.Name, seen)...)
			case *ast.SelectorExpr:
				if i, ok := flagMethods[fn.Sel.Name]; ok && len(call.Args) > i {
					if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, s)
					}
				} else if pkg, ok := fn.X.(*ast.Ident); ok && pkg.Name == "demo" {
					out = append(out, flagsOf("demo."+fn.Sel.Name, seen)...)
				}
			}
			return true
		})
		return out
	}
	if table == nil {
		t.Fatal("no func commands (the table) in cli")
	}
	cmds := map[string][]string{}
	ast.Inspect(table.Body, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		var name, run string
		for _, el := range cl.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch key, _ := kv.Key.(*ast.Ident); {
			case key == nil:
			case key.Name == "Name":
				if lit, ok := kv.Value.(*ast.BasicLit); ok {
					name, _ = strconv.Unquote(lit.Value)
				}
			case key.Name == "Run":
				if id, ok := kv.Value.(*ast.Ident); ok {
					run = id.Name
				}
			}
		}
		if name == "" {
			return true
		}
		var flags []string
		if run != "" {
			flags = flagsOf(run, map[string]bool{})
		}
		cmds[name] = flags
		return false
	})
	if len(cmds) < 20 {
		t.Fatalf("found %d commands in cli's table: %v", len(cmds), cmds)
	}
	return cmds
}

func runBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestEveryCommandHelpExitsZeroAndListsEveryFlag(t *testing.T) {
	t.Parallel()
	cmds := sourceCommands(t)
	usage, _, _ := runBinary(t, "help")
	// Every command in the usage is dispatched, and the other way round
	// (help and version are the two without a line of their own).
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  batchhook ([a-z]+)(?: \| ([a-z]+))?`).FindAllStringSubmatch(usage, -1) {
		listed[m[1]] = true
		if m[2] != "" {
			listed[m[2]] = true
		}
	}
	for name := range cmds {
		if !listed[name] && name != "help" && name != "version" {
			t.Errorf("command %s is dispatched but not in the usage", name)
		}
	}
	for name := range listed {
		if _, ok := cmds[name]; !ok {
			t.Errorf("the usage lists %s, which run does not dispatch", name)
		}
	}
	for name, flags := range cmds {
		args := []string{"--help"}
		if name == "submit" || name == "batches" || name == "serve" {
			args = append(args, "-h") // the short form, on a few
		}
		for _, arg := range args {
			stdout, stderr, code := runBinary(t, name, arg)
			if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage") && name != "version" {
				t.Errorf("batchhook %s %s: exit %d, stderr %q, stdout %q; want exit 0 and the usage on stdout", name, arg, code, stderr, stdout)
				continue
			}
			for _, f := range flags {
				if !regexp.MustCompile(`(^|[\s\[|])--?` + regexp.QuoteMeta(f) + `\b`).MatchString(stdout) {
					t.Errorf("batchhook %s %s does not list its flag -%s:\n%s", name, arg, f, stdout)
				}
			}
		}
	}
}

func TestServeHelpListsEveryVariableWithItsDefault(t *testing.T) {
	t.Parallel()
	stdout, _, code := runBinary(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	shown := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  (BATCHHOOK_[A-Z0-9_]+) +(.+)$`).FindAllStringSubmatch(stdout, -1) {
		shown[m[1]] = m[2]
	}
	vars := config.Variables()
	if len(shown) != len(vars) {
		t.Errorf("serve --help lists %d variables, config reads %d", len(shown), len(vars))
	}
	def := config.Defaults()
	for _, v := range vars {
		if _, ok := shown[v]; !ok {
			t.Errorf("serve --help does not list %s", v)
		}
	}
	// Spot-check the defaults against the values Load applies.
	for v, want := range map[string]string{"BATCHHOOK_LISTEN_ADDR": def.ListenAddr, "BATCHHOOK_RETENTION": "168h",
		"BATCHHOOK_SINKS": def.Sinks, "BATCHHOOK_API_BASE_URL": "(required)", "BATCHHOOK_RESULTS_FIELD": "(unset)"} {
		if shown[v] != want {
			t.Errorf("serve --help shows %s default %q, want %q", v, shown[v], want)
		}
	}
	// docs/configuration.md's table has a row for each, with the same default where the
	// row gives one as a single code span.
	readme, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z0-9_]+)`(?: or `([A-Z0-9_]+)`)? \\|\\s*([^|]*?)\\s*\\|").FindAllStringSubmatch(string(readme), -1) {
		rows[config.Var(m[1])] = strings.TrimSpace(m[3])
		if m[2] != "" {
			rows[config.Var(m[2])] = ""
		}
	}
	for _, v := range vars {
		readmeDef, ok := rows[v]
		if !ok {
			t.Errorf("docs/configuration.md's table has no row for %s", v)
			continue
		}
		if d, ok := strings.CutPrefix(readmeDef, "`"); ok && strings.HasSuffix(d, "`") && !strings.Contains(d[:len(d)-1], "`") {
			if d = strings.TrimSuffix(d, "`"); d != shown[v] {
				t.Errorf("%s: docs/configuration.md's default %q, serve --help's %q", v, d, shown[v])
			}
		}
	}
}
