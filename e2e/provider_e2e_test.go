package e2e

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// A base URL with /api/v1 already in it: the start
// warns naming the fix; every poll then gets 404, and after a run of them
// with no success the daemon says so once in its log, in /readyz's
// warnings (still 200: webhooks are still recorded) and in the metrics;
// the poll's error names the URL it asked for.
func TestWrongBaseURLIsNamedAndShown(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_API_BASE_URL"] = s.sim.URL() + "/api/v1"
	d := startDaemon(t, s.addr, s.env)
	logLine(t, d.out.String(), `"event":"api_base_url_suspect"`, `BATCHHOOK_API_BASE_URL=`+s.sim.URL()+` unless`)

	if out, errOut, code := cli(t, d, "", "track", "b_typo1"); code != 0 {
		t.Fatalf("track: %d %s %s", code, out, errOut)
	}
	doubled := s.sim.URL() + "/api/v1/api/v1/batches/b_typo1"
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"provider_misconfigured"`) })
	logLine(t, d.out.String(), `"event":"poll_failed"`, "GET "+doubled)
	for _, l := range strings.Split(d.out.String(), "\n") {
		if strings.Contains(l, `"event":"poll_failed"`) && strings.Count(l, "does not know the batch") != 1 {
			t.Fatalf("the 404 reason is not said exactly once: %s", l)
		}
	}
	logLine(t, d.out.String(), `"event":"provider_misconfigured"`, doubled, "BATCHHOOK_API_BASE_URL")
	code, body := get(t, d.admin+"/readyz", "")
	if code != 200 || !strings.Contains(body, `"warnings"`) || !strings.Contains(body, doubled) {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	_, metrics := get(t, d.admin+"/metrics", "")
	for _, want := range []string{"batchhook_provider_misconfigured 1", `batchhook_provider_responses_total{code="2xx"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q:\n%s", want, grepLines(metrics, "batchhook_provider"))
		}
	}
	// The polls go on: the whole log, once the daemon is gone, has the
	// line once.
	d.stop(t)
	if strings.Count(d.out.String(), `"event":"provider_misconfigured"`) != 1 {
		t.Fatal("provider_misconfigured logged more than once")
	}
	if strings.Contains(d.out.String(), e2eKey) {
		t.Fatal("the API key reached the log")
	}
	checkDurationFields(t, d.out.String())
}

// checkDurationFields fails when a log line has a duration that is not a
// whole number of milliseconds in a field named …_ms,
// or a duration field without its unit.
func checkDurationFields(t *testing.T, out string) {
	t.Helper()
	seen := 0
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		for k, v := range m {
			switch {
			case strings.HasSuffix(k, "_ms"):
				f, ok := v.(float64)
				if !ok || f != math.Trunc(f) {
					t.Errorf("%s = %v in %s: want whole milliseconds", k, v, l)
				}
				seen++
			case k == "retry_in" || k == "took" || k == "wait":
				t.Errorf("duration field %s without its unit in %s", k, l)
			}
		}
	}
	if seen == 0 {
		t.Error("no …_ms field in the log to check")
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// logLine fails unless some line of out holds every one of want.
func logLine(t *testing.T, out string, want ...string) {
	t.Helper()
	if !hasLogLine(out, want...) {
		t.Fatalf("no log line holds all of %q:\n%s", want, out)
	}
}

// hasLogLine reports whether some line of out holds every one of want.
func hasLogLine(out string, want ...string) bool {
lines:
	for _, l := range strings.Split(out, "\n") {
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue lines
			}
		}
		return true
	}
	return false
}
