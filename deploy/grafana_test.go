package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// There is no Grafana on this machine to import the dashboard into, so its
// JSON is held to what an import into Grafana 10 or later needs and to what
// an operator expects to find in it. That its queries name only served
// series is checked against the real binary in e2e.

// dashboardPanel is the part of a Grafana panel the checks read.
type dashboardPanel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// dashboardProblems lists what keeps the dashboard's JSON from importing
// cleanly into Grafana 10+ with a chosen Prometheus data source, and every
// series of want no panel shows.
func dashboardProblems(text string, want []string) []string {
	var d struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if d.UID == "" || d.Title == "" {
		problems = append(problems, "no uid or title")
	}
	if d.SchemaVersion < 36 {
		problems = append(problems, fmt.Sprintf("schemaVersion %d: Grafana 10 writes 36 or later", d.SchemaVersion))
	}
	hasDS := false
	for _, v := range d.Templating.List {
		hasDS = hasDS || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !hasDS {
		problems = append(problems, "no datasource variable of type prometheus: the importer cannot pick a data source")
	}
	ids := map[int]bool{}
	exprs := ""
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] || p.ID == 0 {
				problems = append(problems, where+": id missing or repeated")
			}
			ids[p.ID] = true
			if p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H < 1 {
				problems = append(problems, where+": gridPos outside the 24 columns")
			}
			switch p.Type {
			case "row":
				walk(p.Panels)
				continue
			case "timeseries", "stat":
			default:
				problems = append(problems, fmt.Sprintf("%s: type %q, want timeseries or stat", where, p.Type))
			}
			if p.Datasource["uid"] != "${datasource}" {
				problems = append(problems, fmt.Sprintf("%s: data source %v, want uid ${datasource}", where, p.Datasource))
			}
			if len(p.Targets) == 0 {
				problems = append(problems, where+": no query")
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
					problems = append(problems, where+": a target without expr, or with a missing or repeated refId")
				}
				refs[tg.RefID] = true
				if tg.Datasource["uid"] != "${datasource}" {
					problems = append(problems, fmt.Sprintf("%s target %s: data source %v, want uid ${datasource}", where, tg.RefID, tg.Datasource))
				}
				exprs += tg.Expr + "\n"
			}
		}
	}
	walk(d.Panels)
	for _, s := range want {
		if !strings.Contains(exprs, s) {
			problems = append(problems, "no panel shows "+s)
		}
	}
	return problems
}

// dashboardSeries are what the dashboard must show: the pipeline from
// webhook to sink, the rejections, the provider's answers, the process.
var dashboardSeries = []string{
	"batchhook_webhook_requests_total", `outcome=~"unauthorized|invalid|not_found`,
	"batchhook_last_accepted_timestamp_seconds", "batchhook_fetch_pages_total",
	"batchhook_fetch_errors_total", "batchhook_provider_responses_total", "batchhook_batches{",
	"batchhook_export_items_total", "batchhook_queue_oldest_seconds", "batchhook_sink_deliveries_total",
	"batchhook_sink_pending", "batchhook_sink_oldest_pending_seconds", "batchhook_build_info",
	"batchhook_previous_run_failed", "batchhook_chunks", "batchhook_submissions_total",
	"batchhook_payment_events_total", "batchhook_payment_deliveries_total",
	"batchhook_payment_oldest_pending_seconds", "up{",
}

// TestGrafanaDashboardImports: deploy/grafana/batchhook.json imports into
// Grafana 10+ with a chosen data source and shows the whole pipeline.
func TestGrafanaDashboardImports(t *testing.T) {
	for _, p := range dashboardProblems(read(t, filepath.Join("grafana", "batchhook.json")), dashboardSeries) {
		t.Error(p)
	}
}

// TestDashboardProblemsCatchPlantedFaults: the check fails on a copy of the
// dashboard with a deprecated panel type, a data source fixed to one
// Grafana's uid, a repeated id, and a series the requirements name missing.
func TestDashboardProblemsCatchPlantedFaults(t *testing.T) {
	good := read(t, filepath.Join("grafana", "batchhook.json"))
	var d map[string]any
	if err := json.Unmarshal([]byte(good), &d); err != nil {
		t.Fatal(err)
	}
	panels := d["panels"].([]any)
	var first, second map[string]any
	for _, p := range panels {
		if p := p.(map[string]any); p["type"] == "timeseries" {
			if first == nil {
				first = p
			} else if second == nil {
				second = p
			}
		}
	}
	first["type"] = "graph"
	second["datasource"] = map[string]any{"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
	second["id"] = first["id"]
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(dashboardProblems(string(b), append(dashboardSeries, "batchhook_no_such_series")), "\n")
	for _, want := range []string{`type "graph", want timeseries or stat`, `data source map[type:prometheus uid:P1809F7CD0C75ACF3]`,
		"id missing or repeated", "no panel shows batchhook_no_such_series"} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem %q among:\n%s", want, got)
		}
	}
}

// TestDashboardQueriesParse: every panel query is PromQL that Prometheus
// parses. Grafana's variables are put in as a scrape would see them
// ($__rate_interval a duration, $job a regular expression), each query
// becomes a recording rule of a temporary rules file, and promtool check
// rules parses them all.
func TestDashboardQueriesParse(t *testing.T) {
	bin := promtool(t)
	var d struct{ Panels []dashboardPanel }
	if err := json.Unmarshal([]byte(read(t, filepath.Join("grafana", "batchhook.json"))), &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				n++
				q, _ := json.Marshal(vars.Replace(tg.Expr)) // a JSON string is a YAML string
				fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %s\n", n, q)
			}
		}
	}
	walk(d.Panels)
	if n < 30 {
		t.Fatalf("found only %d queries in the dashboard", n)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := runPromtool(t, bin, dir, "check", "rules", "dashboard.yml"); !ok {
		t.Fatalf("promtool check rules on the dashboard's queries:\n%s\n%s", out, b.String())
	}
}
