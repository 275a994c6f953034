package cli

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCompletionListsEveryFlag holds the table's completion words to the
// commands themselves: the flags a command's --help shows (defined, or
// named in its usage) are exactly its Flags, and the subcommands its usage
// shows are among its Subs.
func TestCompletionListsEveryFlag(t *testing.T) {
	flagToken := regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z0-9-]+)`)
	serve := func(context.Context, []string, Env) int { return 0 }
	for _, c := range commands(serve) {
		if c.Name == "serve" || c.Name == "completion" || c.Name == "help" {
			continue
		}
		var out bytes.Buffer
		Run(context.Background(), []string{c.Name, "--help"}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}, serve)
		var shown []string
		for _, m := range flagToken.FindAllStringSubmatch(out.String(), -1) {
			if m[1] != "help" && !slices.Contains(shown, m[1]) {
				shown = append(shown, m[1])
			}
		}
		slices.Sort(shown)
		flags := slices.Sorted(slices.Values(c.Flags))
		if !slices.Equal(shown, flags) {
			t.Errorf("%s --help shows the flags %v; the table completes %v", c.Name, shown, flags)
		}
		sub := regexp.MustCompile(`(?m)^\s+batchhook ` + c.Name + ` ([a-z][a-z-]*)`)
		for _, m := range sub.FindAllStringSubmatch(out.String(), -1) {
			if !slices.Contains(c.Subs, m[1]) {
				t.Errorf("%s --help shows the subcommand %s; the table does not complete it", c.Name, m[1])
			}
		}
	}
}

// TestUsageListsEveryCommand: each command of the table has its line in
// the usage, or shares the line before it, and the dispatch finds each.
func TestUsageListsEveryCommand(t *testing.T) {
	cmds := commands(func(context.Context, []string, Env) int { return 0 })
	usage := usageText(cmds)
	for i, c := range cmds {
		if c.Run == nil {
			t.Errorf("%s has no run func", c.Name)
		}
		switch {
		case c.Synopsis != "":
			if !strings.Contains(usage, "\n  batchhook "+c.Synopsis) {
				t.Errorf("the usage has no line for %s", c.Name)
			}
		case i == 0 || cmds[i-1].Synopsis == "":
			t.Errorf("%s has no synopsis and no line before it to share", c.Name)
		}
	}
}

// TestHealthcheckSummaryNamesItsFlags: the usage line is where a start
// script's author looks, so it says that --ready asks /readyz and that
// --wait keeps asking; every flag a summary names is one its command has.
func TestHealthcheckSummaryNamesItsFlags(t *testing.T) {
	flagToken := regexp.MustCompile(`--([a-z][a-z0-9-]+)`)
	for _, c := range commands(func(context.Context, []string, Env) int { return 0 }) {
		for _, m := range flagToken.FindAllStringSubmatch(c.Summary, -1) {
			if !slices.Contains(c.Flags, m[1]) {
				t.Errorf("the summary of %s names --%s, which it does not take", c.Name, m[1])
			}
		}
		if c.Name == "healthcheck" {
			for _, want := range []string{"/healthz", "--ready: /readyz", "--wait"} {
				if !strings.Contains(c.Summary, want) {
					t.Errorf("healthcheck's summary %q does not say %q", c.Summary, want)
				}
			}
		}
	}
}
