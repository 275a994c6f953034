package providerwatch

import (
	"strings"
	"testing"
)

func TestRunOf404sWithoutSuccessIsReportedOnce(t *testing.T) {
	counts := map[string]int{}
	var reports []string
	w := New(Options{Threshold: 3, Count: func(c string) { counts[c]++ },
		Misconfigured: func(p string) { reports = append(reports, p) }})
	const u = "http://127.0.0.1:1/api/v1/api/v1/batches/b1"
	w.Observe(404, u)
	w.Observe(404, u)
	if w.IsMisconfigured() {
		t.Fatal("misconfigured after 2 of 3")
	}
	w.Observe(404, u)
	w.Observe(404, u)
	if !w.IsMisconfigured() || len(reports) != 1 {
		t.Fatalf("misconfigured=%v reports=%d, want true and 1", w.IsMisconfigured(), len(reports))
	}
	if !strings.Contains(reports[0], u) || !strings.Contains(reports[0], "BATCHHOOK_API_BASE_URL") {
		t.Fatalf("report %q lacks the URL or the variable", reports[0])
	}
	w.Observe(200, "http://127.0.0.1:1/api/v1/batches/b1")
	if w.IsMisconfigured() || w.Problem() != "" {
		t.Fatal("a 2xx did not clear the problem")
	}
	// After a success, 404s are ordinary (results lag, mistyped ids).
	for range 10 {
		w.Observe(404, u)
	}
	if w.IsMisconfigured() || len(reports) != 1 {
		t.Fatal("404s after a success were reported")
	}
	if counts["404"] != 14 || counts["2xx"] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestOtherAnswersBreakTheRun(t *testing.T) {
	w := New(Options{Threshold: 2})
	w.Observe(404, "u")
	w.Observe(503, "u")
	w.Observe(404, "u")
	if w.IsMisconfigured() {
		t.Fatal("a 503 between 404s did not break the run")
	}
	w.Observe(404, "u")
	if !w.IsMisconfigured() {
		t.Fatal("two 404s in a row not reported")
	}
}

func TestClass(t *testing.T) {
	for status, want := range map[int]string{0: "none", 200: "2xx", 202: "2xx", 302: "3xx", 400: "4xx", 401: "401",
		403: "403", 404: "404", 410: "4xx", 429: "429", 500: "5xx", 503: "5xx"} {
		if got := Class(status); got != want {
			t.Errorf("Class(%d) = %q, want %q", status, got, want)
		}
	}
	seen := map[string]bool{}
	for _, c := range Classes {
		seen[c] = true
	}
	for status := range 600 {
		if !seen[Class(status)] {
			t.Fatalf("Class(%d) = %q is not in Classes", status, Class(status))
		}
	}
}

func TestLastSaysWhetherTheKeyIsRefused(t *testing.T) {
	w := New(Options{})
	if last, refused := w.Last(); last != "" || refused != 0 {
		t.Fatalf("before any call: %q %d", last, refused)
	}
	w.Observe(401, "u")
	w.Observe(403, "u")
	if last, refused := w.Last(); last != "403" || refused != 2 {
		t.Fatalf("after 401, 403: %q %d, want 403 and 2", last, refused)
	}
	w.Observe(0, "u")
	if last, refused := w.Last(); last != "none" || refused != 0 {
		t.Fatalf("a call without an answer did not end the run: %q %d", last, refused)
	}
}
