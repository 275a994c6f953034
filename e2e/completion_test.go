package e2e

// batchhook completion: the bash script is run by bash;
// zsh and fish, absent here, are checked for every command and flag.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bashComplete sources the script and returns the completions of words
// (the last one being completed).
func bashComplete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+w+"'")
	}
	// The script's path is bash's $1, so no character of it is shell syntax.
	prog := "source \"$1\"\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)-1) + "\n_batchhook\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog, "bash", script)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	out, stderr, code := runBinary(t, "completion", "bash")
	if code != 0 || stderr != "" {
		t.Fatalf("completion bash: exit %d %s", code, stderr)
	}
	script := filepath.Join(t.TempDir(), "batchhook.bash")
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"batchhook", "bat"}, []string{"batches"}},
		{[]string{"batchhook", "fing"}, []string{"fingerprint"}},
		{[]string{"batchhook", "batches", ""}, []string{"list", "show", "refetch", "redeliver"}},
		{[]string{"batchhook", "batches", "list", "--st"}, []string{"--state"}},
		{[]string{"batchhook", "submit", "--dr"}, []string{"--dry-run"}},
		{[]string{"batchhook", "config", ""}, []string{"check"}},
		{[]string{"batchhook", "fingerprint", "--secret-"}, []string{"--secret-env", "--secret-file"}},
		{[]string{"batchhook", "completion", ""}, []string{"bash", "zsh", "fish"}},
	} {
		got := bashComplete(t, script, tc.words...)
		for _, w := range tc.want {
			if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("completing %q: got %v, want %s among them", tc.words, got, w)
			}
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		out, _, code := runBinary(t, "completion", shell)
		if code != 0 {
			t.Fatalf("completion %s: exit %d", shell, code)
		}
		for _, want := range []string{"fingerprint", "dry-run", "secret-env", "redeliver", "config"} {
			if !strings.Contains(out, want) {
				t.Errorf("completion %s lacks %s", shell, want)
			}
		}
	}
	if _, _, code := runBinary(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
}
