package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The build is named alike by `batchhook version`, the started line and
// batchhook_build_info; a webhook to the wrong path is counted and logged
// by the real binary.
func TestBuildInfoAndWrongPathThroughTheBinary(t *testing.T) {
	t.Parallel()
	out, _, code := runBinary(t, "version")
	m := regexp.MustCompile(`^batchhook (\S+) commit (\S+) (\S+)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	version, commit, goVersion := m[1], m[2], m[3]

	d := startDaemon(t, freePort(t), newSetupForConfig(t))
	resp, err := http.Post("http://"+d.addr+"/webhooks/batch-complete", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("wrong path answered %d, want 404", resp.StatusCode)
	}
	_, scrape := get(t, d.admin+"/metrics", "")
	want := `batchhook_build_info{commit="` + commit + `",go="` + goVersion + `",version="` + version + `"} 1`
	if !strings.Contains(scrape, want) || !strings.Contains(scrape, `batchhook_webhook_requests_total{outcome="not_found"} 1`) {
		t.Fatalf("want %s and one not_found in\n%s", want, grepLines(scrape, "batchhook_"))
	}
	if !regexp.MustCompile(`(?m)^batchhook_last_accepted_timestamp_seconds\{product="batch"\} \S+$`).MatchString(scrape) {
		t.Fatalf("no last-accepted series for batch in\n%s", grepLines(scrape, "last_accepted"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(d.out.String(), `"event":"webhook_unknown_path"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no webhook_unknown_path line in\n%s", d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var started, unknown map[string]any
	for _, ev := range logEvents(t, d.out.String()) {
		switch ev["event"] {
		case "started":
			started = ev
		case "webhook_unknown_path":
			unknown = ev
		}
	}
	if started["version"] != version || started["commit"] != commit || started["go"] != goVersion {
		t.Fatalf("started line %v, want version %s commit %s go %s", started, version, commit, goVersion)
	}
	if unknown["path"] != "/webhooks/batch-complete" || unknown["method"] != "POST" || unknown["webhook_path"] != "/webhooks/batch-completed" {
		t.Fatalf("webhook_unknown_path line %v", unknown)
	}
}
