package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// documentedMetric is one row of docs/operations.md's metrics table.
type documentedMetric struct {
	name   string
	labels []string
	kind   string // counter, gauge, histogram
	values []string
}

// readmeMetrics parses the table under "### Metrics" in docs/operations.md: the
// name and labels from the first column, the type from the second, and the
// backticked label values from the third.
func readmeMetrics(t *testing.T) []documentedMetric {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n### Metrics\n")
	if !ok {
		t.Fatal("docs/operations.md has no ### Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| `(batchhook_[a-z_]+)(?:\\{([a-z_,]+)\\})?` \\| ([a-z]+) \\| (.*) \\|$")
	value := regexp.MustCompile("`([a-z0-9_]+)`")
	var out []documentedMetric
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		d := documentedMetric{name: m[1], kind: m[3]}
		if m[2] != "" {
			d.labels = strings.Split(m[2], ",")
		}
		for _, v := range value.FindAllStringSubmatch(m[4], -1) {
			d.values = append(d.values, v[1])
		}
		out = append(out, d)
	}
	if len(out) < 20 {
		t.Fatalf("parsed only %d metric rows from docs/operations.md", len(out))
	}
	return out
}

// Every metric docs/operations.md documents exists right after start, and every
// labelled counter has a series at 0 for each documented value: alerts on
// increase() see the first event after a restart.
func TestEveryDocumentedSeriesExistsAtStart(t *testing.T) {
	t.Parallel()
	d := startEverySeriesDaemon(t)
	code, scrape := get(t, d.admin+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, m := range readmeMetrics(t) {
		if !strings.Contains(scrape, "# TYPE "+m.name+" "+m.kind+"\n") {
			t.Errorf("%s (%s) is documented but not served", m.name, m.kind)
			continue
		}
		if m.kind != "counter" || len(m.labels) == 0 {
			continue
		}
		label := ""
		for _, l := range m.labels {
			if l != "sink" {
				label = l
			}
		}
		if label == "" {
			continue
		}
		if len(m.values) == 0 {
			t.Errorf("docs/operations.md lists no `value` of %s's label %s", m.name, label)
		}
		for _, v := range m.values {
			series := regexp.MustCompile(`(?m)^` + m.name + `\{[^}]*` + label + `="` + v + `"[^}]*\} 0$`)
			if !series.MatchString(scrape) {
				t.Errorf("%s{%s=%q} is not at 0 at start", m.name, label, v)
			}
		}
		// And the other way: no value served that docs/operations.md does not list.
		served := regexp.MustCompile(`(?m)^` + m.name + `\{[^}]*` + label + `="([^"]*)"`)
		for _, sv := range served.FindAllStringSubmatch(scrape, -1) {
			if !slices.Contains(m.values, sv[1]) {
				t.Errorf("%s{%s=%q} is served but docs/operations.md does not list it", m.name, label, sv[1])
			}
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", grepLines(scrape, "batchhook_"))
	}
}

// startEverySeriesDaemon starts the binary with everything that adds
// series on: the payments webhook and an http sink (never reached: nothing
// is exported), so a scrape right after start serves every series.
func startEverySeriesDaemon(t *testing.T) *daemonProc {
	t.Helper()
	s := newSetup(t, lookupsim.Options{})
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	s.env["BATCHHOOK_SINKS"] = "file,http"
	s.env["BATCHHOOK_HTTP_SINK_URL"] = "http://127.0.0.1:9/hooks" // never reached: nothing is exported
	s.env["BATCHHOOK_HTTP_SINK_SECRET"] = newWHSecret(t)
	d := startDaemon(t, s.addr, s.env)
	return d
}
