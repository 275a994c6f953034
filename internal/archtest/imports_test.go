package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/batchhook/batchhook"

type pkg struct {
	ImportPath string
	Deps       []string
}

func listPackages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		deps[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p.Deps
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return deps
}

func dependsOn(deps []string, target string) bool {
	for _, d := range deps {
		if d == target || strings.HasPrefix(d, target+"/") {
			return true
		}
	}
	return false
}

func TestImportGraph(t *testing.T) {
	deps := listPackages(t)
	for _, p := range []string{"config", "store", "receiver", "fetcher", "export", "lookupsim", "daemon", "admin", "metrics", "submit", "lifecycle/purge"} {
		if _, ok := deps[p]; !ok {
			t.Fatalf("package %s not found by go list", p)
		}
	}
	forbidden := map[string][]string{
		"config":    {module},
		"store":     {module + "/receiver", module + "/fetcher", module + "/export", module + "/config"},
		"receiver":  {module + "/fetcher", module + "/export", module + "/lookupsim"},
		"fetcher":   {module + "/receiver", module + "/export", module + "/lookupsim", "github.com/labstack/echo"},
		"export":    {module + "/receiver", module + "/fetcher", "github.com/labstack/echo"},
		"lookupsim": {module + "/receiver", module + "/fetcher", module + "/store", module + "/export"},
		"admin":     {module + "/receiver", module + "/fetcher", module + "/export", "github.com/prometheus"},
		"metrics":   {module + "/receiver", module + "/fetcher", module + "/export", module + "/admin"},
		"submit":    {module + "/receiver", module + "/fetcher", module + "/export", module + "/lookupsim", "github.com/labstack/echo"},
		// The purger reaches the files through an interface the daemon fills.
		"lifecycle/purge": {module + "/receiver", module + "/fetcher", module + "/export", module + "/admin", module + "/submit",
			module + "/sink", module + "/lookupsim", "github.com/labstack/echo"},
	}
	for p, bad := range forbidden {
		for _, b := range bad {
			if dependsOn(deps[p], b) {
				t.Errorf("%s depends on %s", p, b)
			}
		}
	}
	// internal/ is the floor: helpers that lie below every stage. An
	// internal package may import other internal packages, cpf (the
	// CPF rules every layer shares) and outside libraries, never a stage,
	// so no import runs back up from the floor.
	for p := range deps {
		if !strings.HasPrefix(p, "internal/") {
			continue
		}
		for _, imp := range directImports(t, p) {
			rest, ok := strings.CutPrefix(imp, module+"/")
			if !ok || strings.HasPrefix(rest, "internal/") || rest == "cpf" {
				continue
			}
			t.Errorf("%s imports %s: internal/ lies below every stage and imports none", p, imp)
		}
	}
	// One package per outside library.
	owners := map[string][]string{
		"go.etcd.io/bbolt":                               {"store"},
		"github.com/kelseyhightower/envconfig":           {"config"},
		"github.com/labstack/echo/v4":                    {"receiver", "admin", "bench"}, // bench: the bare echo baseline
		"github.com/prometheus/client_golang/prometheus": {"metrics"},
		// franz-go: only the kafka sink (kfake in tests is not a build
		// dependency, so go list does not count it).
		"github.com/twmb/franz-go/pkg/kgo":         {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/kerr":        {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/kmsg":        {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/sasl":        {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/sasl/plain":  {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/sasl/scram":  {"sink/kafkasink"},
		"github.com/twmb/franz-go/pkg/kfake":       {},
		"github.com/nats-io/nats.go":               {"sink/natssink"},
		"github.com/nats-io/nats.go/jetstream":     {"sink/natssink"},
		"github.com/nats-io/nats-server/v2/server": {}, // tests only (go list without -test sees no test imports)
		"github.com/chromedp/chromedp":             {}, // the console's browser tests only (e2e/browser)
		"github.com/hanwen/go-fuse/v2/fuse":        {"internal/powerloss"},
	}
	// The NATS server, the browser driver and the power-loss file system
	// (FUSE) are test fixtures: the binary must not link them.
	for _, lib := range []string{"github.com/nats-io/nats-server", "github.com/chromedp", "github.com/hanwen/go-fuse",
		module + "/internal/powerloss"} {
		if dependsOn(deps["cmd/batchhook"], lib) {
			t.Errorf("cmd/batchhook links %s; only tests may import it", lib)
		}
	}
	for lib, allowed := range owners {
		for p, d := range deps {
			if strings.HasPrefix(p, "cmd/") || p == "daemon" || contains(allowed, p) {
				continue
			}
			for _, imp := range d {
				if imp == lib && directlyImports(t, p, lib) {
					t.Errorf("%s imports %s; only %v may", p, lib, allowed)
				}
			}
		}
	}
}

// The console is a view of the admin API: it reads and acts only through
// that API's replies (in process), so what it can show is what the API
// shows. It imports admin for the reply types and nothing else of
// batchhook but the signature check's explanations and netval, which makes
// the values from a request it logs fit for a log line (masked, capped);
// admin does not know it.
func TestConsoleReadsOnlyTheAdminAPI(t *testing.T) {
	deps := listPackages(t)
	if dependsOn(deps["admin"], module+"/admin/console") {
		t.Errorf("admin depends on admin/console; the daemon hands the console to admin as a handler")
	}
	allowed := []string{module + "/admin", module + "/internal/signature", module + "/internal/netval"}
	for _, imp := range directImports(t, "admin/console") {
		if strings.HasPrefix(imp, module+"/") && !contains(allowed, imp) {
			t.Errorf("admin/console imports %s; it may import only %v", imp, allowed)
		}
		if strings.Contains(imp, "labstack/echo") || strings.Contains(imp, "bbolt") {
			t.Errorf("admin/console imports %s", imp)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// directImports asks go list for p's direct imports (build, not test).
func directImports(t *testing.T, p string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+"/"+p).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// directlyImports reports whether p imports lib itself (not through
// another package).
func directlyImports(t *testing.T, p, lib string) bool {
	t.Helper()
	return contains(directImports(t, p), lib)
}

// The sinks: sink is the vocabulary every side may import, so it
// imports nothing of batchhook; the dispatcher drives sinks through that
// vocabulary and never knows a sink implementation or the edges that feed
// the store; a sink implementation knows the published export it is handed,
// never the store or the pipeline upstream of it.
func TestSinkImportRules(t *testing.T) {
	deps := listPackages(t)
	for _, p := range []string{"sink", "sink/dispatch"} {
		if _, ok := deps[p]; !ok {
			t.Fatalf("package %s not found by go list", p)
		}
	}
	for _, d := range deps["sink"] {
		if strings.HasPrefix(d, module) {
			t.Errorf("sink depends on %s; it must import nothing of batchhook", d)
		}
	}
	for _, b := range []string{"/receiver", "/fetcher", "/submit", "/admin", "/lookupsim"} {
		if dependsOn(deps["sink/dispatch"], module+b) {
			t.Errorf("sink/dispatch depends on %s", module+b)
		}
	}
	impls := 0
	for p, d := range deps {
		if !strings.HasPrefix(p, "sink/") || p == "sink/dispatch" {
			continue
		}
		impls++
		if dependsOn(deps["sink/dispatch"], module+"/"+p) {
			t.Errorf("sink/dispatch depends on the sink implementation %s", p)
		}
		for _, b := range []string{"/store", "/receiver", "/fetcher", "/submit", "/admin", "/sink/dispatch"} {
			if dependsOn(d, module+b) {
				t.Errorf("sink implementation %s depends on %s", p, module+b)
			}
		}
	}
	t.Logf("%d sink implementation package(s) checked", impls)
}
