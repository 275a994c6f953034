package archtest

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
)

// The shell blocks of README.md and of the pages under docs/ are copied by
// people, literally. A new user who ran "go run ./cmd/batchhook serve &"
// got the PID of go, not of the daemon, and stopping it left the daemon
// holding its ports and its database; another found a bare "batchhook" the
// README never built. These tests read every ```sh block in page order and
// hold the rules that keep them runnable as written. A page under docs/ is
// read after README.md, whose "Install" puts batchhook on the PATH.

// shellCommand is one simple command of a README block.
type shellCommand struct {
	page       string   // the file, "README.md" when empty
	line       int      // line of page where the command starts
	words      []string // the words, assignments and redirections included
	background bool     // ended by a single &
}

// readmeShellCommands returns the commands of every ```sh block of doc,
// in order. Continuation lines are joined and comments dropped.
func readmeShellCommands(doc string) ([]shellCommand, error) {
	var out []shellCommand
	lines := strings.Split(doc, "\n")
	inSh, inOther := false, false
	var joined strings.Builder
	start := 0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case !inSh && !inOther && strings.HasPrefix(t, "```"):
			lang := strings.TrimPrefix(t, "```")
			inSh, inOther = lang == "sh", lang != "sh"
			continue
		case (inSh || inOther) && t == "```":
			inSh, inOther = false, false
			continue
		case !inSh:
			continue
		}
		if joined.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(l, "\\") {
			joined.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		joined.WriteString(l)
		cmds, err := splitShell(joined.String())
		if err != nil {
			return nil, fmt.Errorf("README line %d: %w", start, err)
		}
		for _, c := range cmds {
			c.line = start
			out = append(out, c)
		}
		joined.Reset()
	}
	return out, nil
}

// splitShell splits one logical line into simple commands at ;, &, &&,
// ||, | and subshell parentheses, keeping quoted text and $(…) inside
// their word, and dropping a # comment.
func splitShell(s string) ([]shellCommand, error) {
	var cmds []shellCommand
	var cur shellCommand
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			cur.words = append(cur.words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCmd := func(bg bool) {
		endWord()
		if len(cur.words) > 0 {
			cur.background = bg
			cmds = append(cmds, cur)
		}
		cur = shellCommand{}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			word.WriteString(s[i : i+end+2])
			inWord = true
			i += end + 1
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(s); j++ {
				if s[j] == '(' {
					depth++
				} else if s[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated $( in %q", s)
			}
			word.WriteString(s[i : j+1])
			inWord = true
			i = j
		case c == '#' && !inWord:
			i = len(s)
		case c == ' ' || c == '\t':
			endWord()
		case c == ';' || c == '(' || c == ')':
			endCmd(false)
		case c == '|':
			endCmd(false)
			if i+1 < len(s) && s[i+1] == '|' {
				i++
			}
		case c == '&':
			switch {
			case i+1 < len(s) && s[i+1] == '&':
				endCmd(false)
				i++
			case inWord && strings.HasSuffix(word.String(), ">"), i+1 < len(s) && s[i+1] == '>':
				// 2>&1, &>: a redirection, part of the word.
				word.WriteByte(c)
				inWord = true
			default:
				endCmd(true)
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCmd(false)
	return cmds, nil
}

// program returns a command's program and its arguments: the words after
// the leading VAR=value assignments and shell keywords, without
// redirections.
func (c shellCommand) program() (string, []string) {
	var words []string
	for _, w := range c.words {
		if strings.ContainsAny(w[:1], "<>") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "1>") {
			continue
		}
		words = append(words, w)
	}
	for len(words) > 0 {
		w := words[0]
		k, _, isAssign := strings.Cut(w, "=")
		if isAssign && k != "" && !strings.ContainsAny(k, "-/.$\"'") {
			words = words[1:]
			continue
		}
		switch w {
		case "until", "while", "if", "then", "do", "else", "!", "sudo", "exec", "time":
			words = words[1:]
			continue
		}
		return w, words[1:]
	}
	return "", nil
}

// shellProblems lists the rules README's shell blocks break.
func shellProblems(cmds []shellCommand) []string {
	var problems []string
	installed := map[string]bool{} // go install ./cmd/NAME
	built := map[string]bool{}     // go build -o ./bin/ ./cmd/NAME
	for i, c := range cmds {
		prog, args := c.program()
		page := c.page
		if page == "" {
			page = "README.md"
		}
		where := fmt.Sprintf("%s line %d", page, c.line)
		if prog == "go" && len(args) > 0 && (args[0] == "install" || args[0] == "build") {
			bin := false
			for j, a := range args {
				if a == "-o" && j+1 < len(args) {
					o := strings.TrimPrefix(args[j+1], "./")
					bin = o == "bin/" || o == "bin"
				}
			}
			for _, a := range args[1:] {
				if !strings.HasPrefix(a, "./cmd/") {
					continue
				}
				name := path.Base(a) // "..." for every command
				if args[0] == "install" {
					installed[name] = true
				} else if bin {
					built[name] = true
				}
			}
		}
		if c.background {
			if prog == "go" && len(args) > 0 && args[0] == "run" {
				problems = append(problems, where+": `go run … &` gives the PID of go, not of the program; build it first and run the binary")
			}
			next := ""
			if i+1 < len(cmds) && cmds[i+1].line == c.line {
				next = strings.Join(cmds[i+1].words, " ")
			}
			if !strings.HasPrefix(next, "echo $! >") {
				problems = append(problems, fmt.Sprintf("%s: %s runs in the background without `echo $! > FILE` after it: the reader cannot stop it", where, prog))
			}
		}
		if prog == "kill" {
			for _, a := range args {
				if strings.HasPrefix(a, "%") {
					problems = append(problems, where+": `kill %…` stops a job, which for `go run` is go, not the program; kill the saved PID")
				}
			}
		}
		for _, w := range c.words {
			if strings.Contains(w, "$(go env GOBIN):") {
				problems = append(problems, where+": `$(go env GOBIN):` is an empty PATH entry when GOBIN is unset (Go's default), and an empty entry puts the current directory on PATH, first")
			}
		}
		if len(c.words) > 0 && (c.words[0] == "until" || c.words[0] == "while") && !slices.Contains(c.words, "timeout") {
			problems = append(problems, where+": a wait loop without a bound spins for ever when what it waits for died at start; use `batchhook healthcheck --ready --wait 30s` or bound the loop")
		}
		switch {
		case prog == "batchhook" || prog == "lookupsim":
			if !installed[prog] && !installed["..."] {
				problems = append(problems, fmt.Sprintf("%s: %s is called before README installs it (go install ./cmd/%s)", where, prog, prog))
			}
		case strings.HasPrefix(prog, "./bin/") || strings.HasPrefix(prog, "bin/"):
			name := path.Base(prog)
			if !built[name] && !built["..."] {
				problems = append(problems, fmt.Sprintf("%s: %s is called before README builds it (go build -o ./bin/ ./cmd/...)", where, prog))
			}
		}
	}
	return problems
}

// TestDocsShellBlocksRunAsWritten: no backgrounded go run, no kill of a
// job number, every background process's PID saved, and every batchhook
// or lookupsim binary installed or built before a block calls it, in
// README.md and in every page under docs/ (read after README.md).
func TestDocsShellBlocksRunAsWritten(t *testing.T) {
	var readmeCmds []shellCommand
	total, calls := 0, 0
	for _, page := range docPages(t) {
		cmds, err := readmeShellCommands(doc(t, page))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for i := range cmds {
			cmds[i].page = page
			if p, _ := cmds[i].program(); p == "batchhook" || strings.HasSuffix(p, "bin/batchhook") {
				calls++
			}
		}
		total += len(cmds)
		if page == "README.md" {
			readmeCmds = cmds
		} else {
			cmds = append(slices.Clip(readmeCmds), cmds...)
		}
		for _, p := range shellProblems(cmds) {
			if strings.HasPrefix(p, page+" line ") {
				t.Error(p)
			}
		}
	}
	if total < 50 {
		t.Fatalf("found only %d commands in the sh blocks: the parser no longer matches the pages", total)
	}
	if calls < 20 {
		t.Fatalf("found only %d batchhook calls in the sh blocks", calls)
	}
}

// TestShellProblemsCatchesWhatNewUsersHit: the rules above fail on the
// blocks README once had.
func TestShellProblemsCatchesWhatNewUsersHit(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"```sh\nBATCHHOOK_DATA_DIR=/tmp/bh go run ./cmd/batchhook serve &\n```\n", "`go run … &` gives the PID of go"},
		{"```sh\nsleep 9 &\n```\n", "sleep runs in the background without `echo $! > FILE`"},
		{"```sh\nkill %1\n```\n", "`kill %…` stops a job"},
		{"```sh\nbatchhook batches list\n```\n```sh\ngo install ./cmd/batchhook\n```\n", "batchhook is called before README installs it"},
		{"```sh\n./bin/lookupsim -api-key k \\\n  -secret-file s > log 2>&1 & echo $! > pid\n```\n", "./bin/lookupsim is called before README builds it"},
		{"```sh\ngo build -o ./bin/ ./cmd/lookupsim\n./bin/batchhook serve\n```\n", "./bin/batchhook is called before README builds it"},
		{"```sh\nexport PATH=\"$(go env GOBIN):$(go env GOPATH)/bin:$PATH\"\n```\n", "empty PATH entry"},
		{"```sh\ngo build -o ./bin/ ./cmd/...\nuntil ./bin/batchhook healthcheck --ready; do sleep 0.2; done\n```\n", "a wait loop without a bound"},
	} {
		cmds, err := readmeShellCommands(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		problems := shellProblems(cmds)
		if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
			t.Errorf("%q: problems %q, want %q", tc.doc, problems, tc.want)
		}
	}
	ok := "```sh\ngo build -o ./bin/ ./cmd/...\nX=1 ./bin/batchhook serve > log 2>&1 & echo $! > pid # comment &\n" +
		"kill \"$(cat pid)\"\n```\n```sh\ngo install ./cmd/batchhook\necho x | batchhook erase --cpf -\n```\n"
	cmds, err := readmeShellCommands(ok)
	if err != nil {
		t.Fatal(err)
	}
	if p := shellProblems(cmds); len(p) > 0 {
		t.Errorf("a correct block reported: %q", p)
	}
}
