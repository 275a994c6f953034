package daemon

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/config"
)

// TestEverySinkPackageIsRegistered: each sink package (sink/<name>sink) has
// its line in sinkKinds and each line its package, so a sink cannot be
// added in one place only.
func TestEverySinkPackageIsRegistered(t *testing.T) {
	entries, err := os.ReadDir("../sink")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), "sink"); ok && e.IsDir() && name != "" {
			pkgs = append(pkgs, name)
		}
	}
	var registered []string
	for _, k := range sinkKinds {
		if slices.Contains(registered, k.Name) {
			t.Errorf("sink %s is registered twice", k.Name)
		}
		registered = append(registered, k.Name)
		if !slices.Contains(pkgs, k.Name) {
			t.Errorf("sink %s is registered but there is no package sink/%ssink", k.Name, k.Name)
		}
	}
	for _, p := range pkgs {
		if !slices.Contains(registered, p) {
			t.Errorf("package sink/%ssink has no line in sinkKinds", p)
		}
	}
	// A secret that belongs to a sink names a registered one (the reload
	// skips it when that sink is not configured).
	for _, s := range config.Secrets {
		if s.Sink != "" && !slices.Contains(registered, s.Sink) {
			t.Errorf("config.Secrets: %s belongs to sink %q, which is not registered", s.Name, s.Sink)
		}
	}
}

// TestSinkListsComeFromTheRegistry: which configured sinks have an outbox,
// keep the exports and take payment events follows sinkKinds.
func TestSinkListsComeFromTheRegistry(t *testing.T) {
	cfg := config.Defaults()
	if got := deliverySinks(cfg); len(got) != 0 || !keepExports(cfg) {
		t.Fatalf("file only: delivery sinks %q, keep %v", got, keepExports(cfg))
	}
	cfg.Sinks = " http, exec ,http"
	if got := strings.Join(deliverySinks(cfg), ","); got != "http,exec" || keepExports(cfg) {
		t.Fatalf("delivery sinks %q, keep %v", got, keepExports(cfg))
	}
	cfg.Sinks = "exec,file,nats,kafka"
	if got := strings.Join(paymentSinks(cfg), ","); got != "file,nats,kafka" {
		t.Fatalf("payment sinks %q; want every sink but exec, in order", got)
	}
	if got := strings.Join(deliverySinks(cfg), ","); got != "exec,nats,kafka" {
		t.Fatalf("delivery sinks %q", got)
	}
	cfg.Sinks = "exec"
	if got := noPayments(cfg) + "; add " + orList(paymentKinds()); got != "exec does not take them; add file, http, kafka or nats" {
		t.Fatalf("payment_sinks_none says %q", got)
	}
	rules := SinkRules()
	if len(rules) != len(sinkKinds) || rules[0].Name != "file" {
		t.Fatalf("SinkRules %v", rules)
	}
}
