package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/internal/testutil"

	"go.yaml.in/yaml/v3"
)

// The alert rules under prometheus/ are what wakes an operator, so they are
// held to three things here: promtool accepts them and their unit tests
// pass (and those tests fail when a rule is wrong), every alert is made to
// fire by some test, and every alert carries a severity, a summary, a
// description and a runbook that opens a real section of the docs. That the
// rules name only series batchhook serves is checked against the real
// binary in e2e (TestOperatorKitNamesOnlyServedSeries).

const (
	rulesFile     = "batchhook-rules.yml"
	rulesTestFile = "batchhook-rules.test.yml"
)

// promtool returns the path of promtool (Debian's prometheus package). A
// machine without it skips, unless CI is set: CI installs it, and a check of
// the alerts that silently skips there would prove nothing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool not installed, and CI is set: .ci/run installs it (apt-get install prometheus)")
	}
	t.Skip("promtool not installed (apt-get install prometheus)")
	return ""
}

// runPromtool runs promtool in dir and returns its output and whether it
// exited 0; any other failure to run it ends the test.
func runPromtool(t *testing.T, bin, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("promtool %v: %v", args, err)
	}
	return string(out), err == nil
}

// TestPrometheusRulesPassPromtool: promtool check rules accepts the rules
// and promtool test rules passes their unit tests.
func TestPrometheusRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	if out, ok := runPromtool(t, bin, "prometheus", "check", "rules", rulesFile); !ok {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	if out, ok := runPromtool(t, bin, "prometheus", "test", "rules", rulesTestFile); !ok {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}

// TestPromtoolTestsCatchAPlantedFault: the unit tests are not a formality.
// A copy of the rules whose dead man's switch forgets the hour of silence
// (it would page right after every restart) makes promtool test rules fail
// on that alert.
func TestPromtoolTestsCatchAPlantedFault(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules := read(t, filepath.Join("prometheus", rulesFile))
	faulty := strings.Replace(rules, `{product="batch"}) > 3600`, `{product="batch"}) > 60`, 1)
	if faulty == rules {
		t.Fatal("the dead man's switch no longer reads `{product=\"batch\"}) > 3600`: plant the fault elsewhere")
	}
	for name, text := range map[string]string{rulesFile: faulty, rulesTestFile: read(t, filepath.Join("prometheus", rulesTestFile))} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, ok := runPromtool(t, bin, dir, "test", "rules", rulesTestFile)
	if ok || !strings.Contains(out, "alertname: BatchhookNoWebhooks") {
		t.Fatalf("promtool test rules passed a dead man's switch that fires after a restart (ok=%v):\n%s", ok, out)
	}
}

// alertRule is one alerting rule of a Prometheus rules file.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// ruleFile is a Prometheus rules file.
type ruleFile struct {
	Groups []struct {
		Name  string      `yaml:"name"`
		Rules []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleTests is the part of a promtool test file that says which alerts a
// test expects to fire.
type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// headingAnchors returns the anchors of a Markdown page's headings, outside
// fenced blocks (where "# comment" is not a heading).
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	inside := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inside = !inside
			continue
		}
		t := strings.TrimLeft(l, "#")
		if inside || len(t) == len(l) || len(l)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		out[testutil.HeadingSlug(t)] = true
	}
	return out
}

// alertProblems lists what is wrong with the alerts of rules: a missing
// severity (critical or warning), summary or description; a runbook that is
// not docs/operations.md#ANCHOR with ANCHOR a heading of operations (the
// text of docs/operations.md); an alert no test of tests expects to fire;
// and a test of an alert the rules do not have.
func alertProblems(rules, tests, operations string) ([]string, error) {
	var rf ruleFile
	if err := yaml.Unmarshal([]byte(rules), &rf); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var rt ruleTests
	if err := yaml.Unmarshal([]byte(tests), &rt); err != nil {
		return nil, fmt.Errorf("tests: %w", err)
	}
	fired, tested := map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			tested[a.Alertname] = true
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	anchors := headingAnchors(operations)
	var problems []string
	var names []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue // a recording rule
			}
			names = append(names, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				problems = append(problems, fmt.Sprintf("%s: severity %q, want critical or warning", r.Alert, s))
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					problems = append(problems, fmt.Sprintf("%s: no %s annotation", r.Alert, a))
				}
			}
			page, anchor, _ := strings.Cut(r.Annotations["runbook"], "#")
			switch {
			case page != "docs/operations.md" || anchor == "":
				problems = append(problems, fmt.Sprintf("%s: runbook %q is not docs/operations.md#SECTION", r.Alert, r.Annotations["runbook"]))
			case !anchors[anchor]:
				problems = append(problems, fmt.Sprintf("%s: runbook %q: docs/operations.md has no heading #%s", r.Alert, r.Annotations["runbook"], anchor))
			}
			if !fired[r.Alert] {
				problems = append(problems, fmt.Sprintf("%s: no test in %s makes it fire", r.Alert, rulesTestFile))
			}
		}
	}
	for name := range tested {
		if !slices.Contains(names, name) {
			problems = append(problems, fmt.Sprintf("%s tests alert %s, which the rules do not have", rulesTestFile, name))
		}
	}
	slices.Sort(problems)
	return problems, nil
}

// TestAlertsHaveRunbooksAndFiringTests: every alert is complete, links a
// section of docs/operations.md that exists, and fires in some unit test.
func TestAlertsHaveRunbooksAndFiringTests(t *testing.T) {
	rules := read(t, filepath.Join("prometheus", rulesFile))
	problems, err := alertProblems(rules, read(t, filepath.Join("prometheus", rulesTestFile)), read(t, filepath.Join("..", "docs", "operations.md")))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if n := strings.Count(rules, "- alert: "); n < 15 {
		t.Fatalf("found only %d alerts in %s", n, rulesFile)
	}
}

// TestAlertProblemsCatchPlantedFaults: the check finds each fault planted in
// a small rules file, and passes a sound one.
func TestAlertProblemsCatchPlantedFaults(t *testing.T) {
	ops := "# Ops\n\n## Runbooks\n\n### When the disk is full\n\n```sh\n# when-it-is-not-a-heading\n```\n"
	rules := `groups:
  - name: g
    rules:
      - record: job:x:sum
        expr: sum(x)
      - alert: Good
        expr: x > 0
        labels: {severity: critical}
        annotations: {summary: s, description: d, runbook: "docs/operations.md#when-the-disk-is-full"}
      - alert: NoAnchor
        expr: x > 0
        labels: {severity: warning}
        annotations: {summary: s, description: d, runbook: "docs/operations.md#when-the-disk-is-ful"}
      - alert: InABlock
        expr: x > 0
        labels: {severity: warning}
        annotations: {summary: s, description: d, runbook: "docs/operations.md#when-it-is-not-a-heading"}
      - alert: Bare
        expr: x > 0
        labels: {severity: page}
        annotations: {summary: s, runbook: "https://example.com/runbook"}
      - alert: NeverFires
        expr: x > 0
        labels: {severity: warning}
        annotations: {summary: s, description: d, runbook: "docs/operations.md#when-the-disk-is-full"}
`
	tests := `tests:
  - alert_rule_test:
      - {alertname: Good, exp_alerts: [{exp_labels: {severity: critical}}]}
      - {alertname: NoAnchor, exp_alerts: [{}]}
      - {alertname: InABlock, exp_alerts: [{}]}
      - {alertname: Bare, exp_alerts: [{}]}
      - {alertname: NeverFires, exp_alerts: []}
      - {alertname: Renamed, exp_alerts: [{}]}
`
	got, err := alertProblems(rules, tests, ops)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Bare: no description annotation`,
		`Bare: runbook "https://example.com/runbook" is not docs/operations.md#SECTION`,
		`Bare: severity "page", want critical or warning`,
		`InABlock: runbook "docs/operations.md#when-it-is-not-a-heading": docs/operations.md has no heading #when-it-is-not-a-heading`,
		`NeverFires: no test in batchhook-rules.test.yml makes it fire`,
		`NoAnchor: runbook "docs/operations.md#when-the-disk-is-ful": docs/operations.md has no heading #when-the-disk-is-ful`,
		`batchhook-rules.test.yml tests alert Renamed, which the rules do not have`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
