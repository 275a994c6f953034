package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every series, label and label value the alert rules and the dashboard
// under deploy/ use is served by the real binary right after start (with
// payments and an http sink configured, as for the metrics table); and the
// same check, on copies of those files with a planted misspelling, fails.
func TestOperatorKitNamesOnlyServedSeries(t *testing.T) {
	t.Parallel()
	queries, err := kitQueries(filepath.Join("..", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	rules, dashboard := 0, 0
	for _, q := range queries {
		if strings.HasPrefix(q.where, "batchhook-rules.yml ") {
			rules++
		} else if strings.HasPrefix(q.where, "batchhook.json ") {
			dashboard++
		}
	}
	if rules < 15 || dashboard < 30 || len(kitSeries(queries)) < 25 {
		t.Fatalf("read %d rule and %d dashboard queries naming %d batchhook series: the reading no longer finds them", rules, dashboard, len(kitSeries(queries)))
	}

	d := startEverySeriesDaemon(t)
	code, text := get(t, d.admin+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	scrape := parseScrape(text)
	for _, p := range seriesProblems(queries, scrape) {
		t.Error(p)
	}

	// The planted faults: a misspelt series in a copy of the rules, and a
	// label value the daemon does not serve in a copy of the dashboard.
	plant := func(where, old, bad, want string) {
		t.Helper()
		var planted []kitQuery
		for _, q := range queries {
			if strings.HasPrefix(q.where, where) && strings.Contains(q.expr, old) {
				planted = append(planted, kitQuery{q.where, strings.ReplaceAll(q.expr, old, bad)})
			}
		}
		if len(planted) == 0 {
			t.Fatalf("no query of %s holds %q to plant a fault in", where, old)
		}
		if got := seriesProblems(planted, scrape); len(got) != len(planted) || !strings.Contains(got[0], want) {
			t.Errorf("planted %q for %q in %d queries of %s; problems found: %q", bad, old, len(planted), where, got)
		}
	}
	plant("batchhook-rules.yml", "batchhook_sink_oldest_pending_seconds", "batchhook_sink_oldest_pending_second",
		"batchhook_sink_oldest_pending_second is not served")
	plant("batchhook-rules.yml", `outcome="not_found"`, `outcome="notfound"`,
		`batchhook_webhook_requests_total{outcome="notfound"} is not served`)
	plant("batchhook.json", "batchhook_fetch_errors_total", "batchhook_fetch_error_total",
		"batchhook_fetch_error_total is not served")
	plant("batchhook.json", `|not_found|`, `|not_fonud|`,
		`batchhook_webhook_requests_total{outcome="not_fonud"} is not served`)
}

// seriesProblems tells series from functions, keywords and label names,
// checks histograms by their family, leaves Grafana's variables and the
// target labels alone, and reports each fault planted below.
func TestSeriesProblemsCatchPlantedFaults(t *testing.T) {
	scrape := parseScrape(`# TYPE batchhook_webhook_requests_total counter
batchhook_webhook_requests_total{outcome="accepted"} 0
batchhook_webhook_requests_total{outcome="not_found"} 0
# TYPE batchhook_webhook_ack_seconds histogram
batchhook_webhook_ack_seconds_bucket{le="+Inf"} 0
batchhook_webhook_ack_seconds_sum 0
batchhook_webhook_ack_seconds_count 0
# TYPE batchhook_batches_in_flight gauge
batchhook_batches_in_flight 0
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e+09
`)
	good := []kitQuery{
		{"ok1", `sum by (job, instance) (increase(batchhook_webhook_requests_total{outcome=~"accepted|not_found"}[15m])) > 0
			and on (job, instance) min_over_time(batchhook_batches_in_flight[1h]) > 0`},
		{"ok2", `histogram_quantile(0.99, sum by (le) (rate(batchhook_webhook_ack_seconds_bucket{job=~"$job", instance=~"$instance"}[$__rate_interval])))`},
		{"ok3", `up{job="batchhook"} == 0 or absent(up{job="batchhook"}) or changes(process_start_time_seconds{job="batchhook"}[1h]) >= 3`},
		{"ok4", `label_values(batchhook_webhook_requests_total{job=~"$job"}, outcome)`},
		{"ok5", `time() - batchhook_webhook_ack_seconds_count offset 5m`},
	}
	if got := seriesProblems(good, scrape); len(got) != 0 {
		t.Fatalf("problems in sound queries: %q", got)
	}
	bad := []kitQuery{
		{"name", `batchhook_webhook_request_total`},
		{"prefix", `rate(bathook_webhook_requests_total[5m])`},
		{"value", `batchhook_webhook_requests_total{outcome="notfound"}`},
		{"alternative", `batchhook_webhook_requests_total{outcome=~"accepted|notfound"}`},
		{"regex", `batchhook_webhook_requests_total{outcome=~"not.*"}`},
		{"label", `batchhook_batches_in_flight{state="queued"}`},
		{"function", `rat(batchhook_webhook_requests_total[5m])`},
		{"histogram", `batchhook_batches_in_flight_bucket`},
		{"label_values", `label_values(batchhook_batches_in_flight, state)`},
	}
	want := []string{
		`name: batchhook_webhook_request_total is not served`,
		`prefix: bathook_webhook_requests_total is not served`,
		`value: batchhook_webhook_requests_total{outcome="notfound"} is not served`,
		`alternative: batchhook_webhook_requests_total{outcome="notfound"} is not served`,
		`regex: batchhook_webhook_requests_total{outcome=~"not.*"}: write the values out (a|b), so that each can be checked`,
		`label: batchhook_batches_in_flight has no label state`,
		`function: rat( is not a PromQL function`,
		`histogram: batchhook_batches_in_flight_bucket is not served`,
		`label_values: label_values of label state, which batchhook_batches_in_flight does not carry`,
	}
	if got := seriesProblems(bad, scrape); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
