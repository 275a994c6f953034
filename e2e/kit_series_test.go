package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The operator's kit (deploy/prometheus's alert rules, deploy/grafana's
// dashboard) is PromQL that Prometheus accepts whatever it names: a series
// that does not exist is an empty result, so a misspelt alert never fires
// and a panel stays blank. seriesProblems holds every name and label value
// those queries use to a scrape of the real binary.

// kitQuery is one PromQL expression of the kit, with where it comes from.
type kitQuery struct {
	where string
	expr  string
}

// kitQueries reads every alerting or recording rule's expression of the
// rules files under dir/prometheus (the promtool test files excepted: their
// series are inputs, not queries) and every query of the dashboards under
// dir/grafana: each panel target's expr and each query variable's query.
func kitQueries(dir string) ([]kitQuery, error) {
	var out []kitQuery
	rules, err := filepath.Glob(filepath.Join(dir, "prometheus", "*.yml"))
	if err != nil {
		return nil, err
	}
	for _, path := range rules {
		if strings.HasSuffix(path, ".test.yml") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert  string `yaml:"alert"`
					Record string `yaml:"record"`
					Expr   string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				out = append(out, kitQuery{filepath.Base(path) + " " + r.Alert + r.Record, r.Expr})
			}
		}
	}
	dashboards, err := filepath.Glob(filepath.Join(dir, "grafana", "*.json"))
	if err != nil {
		return nil, err
	}
	for _, path := range dashboards {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var d any
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, dashboardQueries(filepath.Base(path), filepath.Base(path), d)...)
	}
	return out, nil
}

// dashboardQueries walks a Grafana dashboard's JSON for the PromQL in it:
// the "expr" of panel targets, and the query of "query" variables. file
// names the dashboard, where the panel being read.
func dashboardQueries(file, where string, v any) []kitQuery {
	var out []kitQuery
	switch v := v.(type) {
	case map[string]any:
		if title, ok := v["title"].(string); ok && v["targets"] != nil {
			where = fmt.Sprintf("%s panel %q", file, title)
		}
		if e, ok := v["expr"].(string); ok {
			ref, _ := v["refId"].(string)
			out = append(out, kitQuery{where + " " + ref, e})
		}
		if v["type"] == "query" {
			name, _ := v["name"].(string)
			switch q := v["query"].(type) {
			case string:
				out = append(out, kitQuery{file + " variable " + name, q})
			case map[string]any:
				if s, ok := q["query"].(string); ok {
					out = append(out, kitQuery{file + " variable " + name, s})
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "panels" || k == "templating" || k == "list" || k == "targets" {
				out = append(out, dashboardQueries(file, where, v[k])...)
			}
		}
	case []any:
		for _, e := range v {
			out = append(out, dashboardQueries(file, where, e)...)
		}
	}
	return out
}

// scraped is what a /metrics scrape serves: each family's type, and each
// series name's labels with the values served for them.
type scraped struct {
	types  map[string]string
	labels map[string]map[string]map[string]bool // series name → label → values
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseScrape reads the Prometheus text format.
func parseScrape(text string) scraped {
	s := scraped{types: map[string]string{}, labels: map[string]map[string]map[string]bool{}}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.types[f[2]] = f[3]
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		if s.labels[m[1]] == nil {
			s.labels[m[1]] = map[string]map[string]bool{}
		}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			if s.labels[m[1]][p[1]] == nil {
				s.labels[m[1]][p[1]] = map[string]bool{}
			}
			s.labels[m[1]][p[1]][p[2]] = true
		}
	}
	return s
}

// served says whether name is a series the scrape has: a family with a
// TYPE line, or a histogram's or summary's _bucket, _sum or _count.
func (s scraped) served(name string) bool {
	if _, ok := s.types[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if t := s.types[base]; t == "histogram" || (t == "summary" && suffix != "_bucket") {
				return true
			}
		}
	}
	return false
}

// promqlWords are the identifiers of PromQL (and of Grafana's variable
// queries) that are not series: functions, aggregations, keywords.
var promqlWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min
		count_over_time day_of_month day_of_week day_of_year days_in_month delta deriv exp
		floor histogram_avg histogram_count histogram_fraction histogram_quantile
		histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase
		irate label_join label_replace last_over_time ln log10 log2 mad_over_time
		max_over_time min_over_time minute month predict_linear present_over_time
		quantile_over_time rate resets round scalar sgn sort sort_desc sqrt
		stddev_over_time stdvar_over_time sum_over_time time timestamp vector year
		sum min max avg group stddev stdvar count count_values bottomk topk quantile
		by without on ignoring group_left group_right bool and or unless offset
		inf nan start end
		label_values label_names metrics query_result`) {
		promqlWords[w] = true
	}
}

var (
	quoted      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	selector    = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcher     = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)
	grouping    = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	braces      = regexp.MustCompile(`\{[^}]*\}`)
	brackets    = regexp.MustCompile(`\[[^\]]*\]`)
	word        = regexp.MustCompile(`[a-zA-Z0-9_:$.]+`)
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)
	literalAlt  = regexp.MustCompile(`^[a-zA-Z0-9_+.]+$`)
)

// targetLabels are put on every series by Prometheus's scrape, not served
// by batchhook; up is the series Prometheus makes for every target.
var targetLabels = map[string]bool{"job": true, "instance": true}

// seriesProblems lists, for each query, every series it names that the
// scrape does not serve, every label it matches on that the series does not
// carry, and every label value it matches that the scrape does not serve
// for that label (alternatives of a regular expression one by one; values
// holding a Grafana variable, "$job", are left to Grafana). An identifier is
// a series unless it is a PromQL function, aggregation or keyword, so a
// name misspelt anywhere, its prefix included, is caught.
func seriesProblems(queries []kitQuery, s scraped) []string {
	var problems []string
	for _, q := range queries {
		expr := q.expr
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			expr = m[1]
			names := word.FindAllString(braces.ReplaceAllString(m[1], "{}"), -1)
			if len(names) == 1 && !targetLabels[m[2]] && s.labels[names[0]][m[2]] == nil {
				problems = append(problems, fmt.Sprintf("%s: label_values of label %s, which %s does not carry", q.where, m[2], names[0]))
			}
		}
		for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
			name := sel[1]
			for _, part := range strings.Split(sel[2], ",") {
				if strings.TrimSpace(part) == "" {
					continue
				}
				m := matcher.FindStringSubmatch(part)
				if m == nil {
					problems = append(problems, fmt.Sprintf("%s: cannot read the matcher %q of %s", q.where, part, name))
					continue
				}
				label, op, value := m[1], m[2], m[3]
				if targetLabels[label] {
					continue
				}
				values := s.labels[name][label]
				if values == nil {
					problems = append(problems, fmt.Sprintf("%s: %s has no label %s", q.where, name, label))
					continue
				}
				if strings.Contains(value, "$") {
					continue
				}
				alts := []string{value}
				if op == "=~" || op == "!~" {
					alts = strings.Split(value, "|")
				}
				for _, a := range alts {
					switch {
					case !literalAlt.MatchString(a):
						problems = append(problems, fmt.Sprintf("%s: %s{%s%s%q}: write the values out (a|b), so that each can be checked", q.where, name, label, op, value))
					case !values[a]:
						problems = append(problems, fmt.Sprintf("%s: %s{%s=%q} is not served", q.where, name, label, a))
					}
				}
			}
		}
		bare := quoted.ReplaceAllString(expr, `""`)
		bare = braces.ReplaceAllString(bare, "{}")
		bare = brackets.ReplaceAllString(bare, "[]")
		bare = grouping.ReplaceAllString(bare, "$1")
		for _, loc := range word.FindAllStringIndex(bare, -1) {
			w := bare[loc[0]:loc[1]]
			if w[0] == '$' || w[0] == '.' || (w[0] >= '0' && w[0] <= '9') || promqlWords[strings.ToLower(w)] {
				continue
			}
			if strings.HasPrefix(strings.TrimLeft(bare[loc[1]:], " \t\n"), "(") {
				problems = append(problems, fmt.Sprintf("%s: %s( is not a PromQL function", q.where, w))
				continue
			}
			if w != "up" && !s.served(w) {
				problems = append(problems, fmt.Sprintf("%s: %s is not served", q.where, w))
			}
		}
	}
	return slices.Compact(problems)
}

// kitSeries returns the distinct series names the queries use (what
// seriesProblems checks), for a count that proves the reading found them.
func kitSeries(queries []kitQuery) []string {
	var out []string
	for _, q := range queries {
		bare := brackets.ReplaceAllString(braces.ReplaceAllString(quoted.ReplaceAllString(q.expr, `""`), "{}"), "[]")
		for _, w := range word.FindAllString(bare, -1) {
			if strings.HasPrefix(w, "batchhook_") && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}
