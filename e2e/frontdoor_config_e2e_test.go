package e2e

// Configuration at the front door, with the real binary:
// what the operator sees at start.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// logEvents decodes the JSON log lines of out, in order.
func logEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event"] != nil {
			evs = append(evs, m)
		}
	}
	return evs
}

func TestUnwritableDataDirExitsTwoNamingTheVariable(t *testing.T) {
	t.Parallel()
	// Root ignores directory modes (DECISIONS 16): sysfs refuses a mkdir
	// even to root.
	if st, err := os.Stat("/sys/kernel"); err != nil || !st.IsDir() {
		t.Skip("no /sys here")
	}
	code, stderr, stdout := runServe(t, []string{binary, "serve"},
		map[string]string{"BATCHHOOK_DATA_DIR": "/sys/batchhook-test-data/db"})
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s\n%s", code, stderr, stdout)
	}
	stderrLine(t, stderr, "BATCHHOOK_DATA_DIR", "/sys/batchhook-test-data/db")
	var names []string
	for _, ev := range logEvents(t, stdout) {
		names = append(names, ev["event"].(string))
	}
	if len(names) == 0 || names[len(names)-1] != "start_failed" {
		t.Fatalf("log events %v, want start_failed last", names)
	}
	for _, n := range names {
		if n == "stopped" {
			t.Fatalf("log events %v: stopped is logged for a daemon that never started", names)
		}
	}
}

func TestStartWarnsUnknownVariablesAndLimitsAboveTheProviders(t *testing.T) {
	t.Parallel()
	s := newSetupForConfig(t)
	s["BATCHHOOK_SUBMIT_PER_MINUTE"] = "20"
	s["BATCHHOOK_MAX_IN_FLIGHT"] = "40"
	s["BATCHHOOK_FETCH_WORKER"] = "2"
	s["BATCHHOOK_LOG_LEVEL"] = "Info" // refused once, before levels were read case-blind
	d := startDaemon(t, freePort(t), s)
	d.stop(t)
	var unknown, limits map[string]any
	for _, ev := range logEvents(t, d.out.String()) {
		switch ev["event"] {
		case "unknown_variable":
			unknown = ev
		case "limit_above_provider":
			limits = ev
		}
	}
	if unknown == nil || unknown["variable"] != "BATCHHOOK_FETCH_WORKER" ||
		!strings.Contains(unknown["message"].(string), "did you mean BATCHHOOK_FETCH_WORKERS?") {
		t.Fatalf("unknown_variable line %v, want BATCHHOOK_FETCH_WORKER with a suggestion", unknown)
	}
	if limits == nil || limits["variable"] != "BATCHHOOK_SUBMIT_PER_MINUTE" || limits["path"] != nil {
		t.Fatalf("limit_above_provider line %v, want BATCHHOOK_SUBMIT_PER_MINUTE and no path", limits)
	}
}

func TestStartedLineShowsTheLimitsAboveTheProviders(t *testing.T) {
	t.Parallel()
	s := newSetupForConfig(t)
	s["BATCHHOOK_MAX_IN_FLIGHT"] = "80"
	d := startDaemon(t, freePort(t), s)
	d.stop(t)
	for _, ev := range logEvents(t, d.out.String()) {
		if ev["event"] != "started" {
			continue
		}
		above, _ := ev["above_provider_limits"].([]any)
		if len(above) != 1 || above[0] != "BATCHHOOK_MAX_IN_FLIGHT" || ev["max_in_flight"] != float64(80) || ev["submit_per_minute"] != float64(10) {
			t.Fatalf("started line %v, want max_in_flight 80 listed above the provider's limits", ev)
		}
		return
	}
	t.Fatalf("no started line:\n%s", d.out.String())
}

// newSetupForConfig is the environment of a daemon that needs no
// provider: the required settings and a fresh data directory.
func newSetupForConfig(t *testing.T) map[string]string {
	return map[string]string{"BATCHHOOK_SIGNING_SECRET": "s", "BATCHHOOK_API_KEY": "k",
		"BATCHHOOK_API_BASE_URL": "http://127.0.0.1:1", "BATCHHOOK_DATA_DIR": t.TempDir()}
}
