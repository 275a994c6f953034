package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/batchhook/batchhook/config"
)

// staticBinary is built once, by the Dockerfile's command, for the tests
// that need the real binary.
var staticBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "batchhook-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	staticBinary = filepath.Join(dir, "batchhook")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", staticBinary, "../cmd/batchhook")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "static build (the Dockerfile's command): %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfile(t *testing.T) {
	df := read(t, "Dockerfile")
	var froms []string
	lines := map[string][]string{}
	for _, l := range strings.Split(df, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		word, rest, _ := strings.Cut(l, " ")
		lines[word] = append(lines[word], rest)
		if word == "FROM" {
			froms = append(froms, rest)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("not multi-stage: %v", froms)
	}
	final := froms[len(froms)-1]
	if !strings.Contains(final, "distroless") && !strings.HasPrefix(final, "scratch") {
		t.Errorf("final stage %q is neither distroless nor scratch", final)
	}
	if !strings.Contains(df, "CGO_ENABLED=0") {
		t.Error("binary is not built with CGO_ENABLED=0 (static)")
	}
	users := lines["USER"]
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1], "0") || strings.HasPrefix(users[len(users)-1], "root") {
		t.Errorf("final USER %v is root or missing", users)
	}
	if !strings.Contains(strings.Join(lines["VOLUME"], " "), "/data") {
		t.Error("no /data volume")
	}
	expose := strings.Join(lines["EXPOSE"], " ")
	for _, port := range []string{"8080", "9090"} {
		if !strings.Contains(expose, port) {
			t.Errorf("port %s not exposed", port)
		}
	}
	if hc := strings.Join(lines["HEALTHCHECK"], " "); !strings.Contains(hc, "healthcheck") {
		t.Errorf("HEALTHCHECK %q does not use the binary's healthcheck", hc)
	}
	if !strings.Contains(df, "BATCHHOOK_DATA_DIR=/data") {
		t.Error("BATCHHOOK_DATA_DIR is not the volume")
	}
}

// unitKeys parses a systemd unit into section → key → values.
func unitKeys(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "["):
			section = strings.Trim(l, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" {
				t.Fatalf("bad unit line %q", l)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	text := read(t, filepath.Join("systemd", "batchhook.service"))
	svc := unitKeys(t, text)["Service"]
	want := map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"StateDirectory": "batchhook", "ReadOnlyPaths": "/etc/batchhook", "UMask": "0077", "User": "batchhook",
		"CapabilityBoundingSet": "",
		// A failed commit exits non-zero for a fresh open (DECISIONS 31).
		"Restart": "on-failure",
	}
	for k, v := range want {
		if got := svc[k]; len(got) == 0 || got[len(got)-1] != v {
			t.Errorf("%s = %v, want %q", k, got, v)
		}
	}
	for _, k := range []string{"EnvironmentFile", "SystemCallFilter", "RestrictAddressFamilies", "ExecStart"} {
		if len(svc[k]) == 0 {
			t.Errorf("%s missing", k)
		}
	}
	if r := strings.Join(svc["ExecReload"], " "); !strings.Contains(r, "HUP") {
		t.Errorf("ExecReload %q does not send SIGHUP", r)
	}
	if _, ok := svc["LoadCredential"]; ok {
		t.Error("LoadCredential copies secrets once at start, so SIGHUP would re-read the old one (DECISIONS 14)")
	}
}

// TestSystemdAnalyze runs systemd-analyze verify on a copy of the unit whose
// ExecStart is a freshly built binary and whose EnvironmentFile= is the
// example, and systemd-analyze security. (verify does not apply the
// environment file: TestEnvExampleUnderSystemd does, in Go.)
func TestSystemdAnalyze(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	bin := staticBinary
	unit := read(t, filepath.Join("systemd", "batchhook.service"))
	unit = strings.ReplaceAll(unit, "/usr/local/bin/batchhook", bin)
	// The example, copied as the README says, is the unit's environment file.
	envFile := filepath.Join(dir, "batchhook.env")
	if err := os.WriteFile(envFile, []byte(read(t, "batchhook.env.example")), 0o600); err != nil {
		t.Fatal(err)
	}
	unit = regexp.MustCompile(`(?m)^EnvironmentFile=.*$`).ReplaceAllString(unit, "EnvironmentFile="+envFile)
	path := filepath.Join(dir, "batchhook.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command("systemd-analyze", "security", "--offline=true", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Fatalf("exposure level %.1f, want at most 2.0 (systemd's OK band)", level)
	}
}

type k8sDoc = map[string]any

func k8sDocs(t *testing.T) map[string]k8sDoc {
	t.Helper()
	docs := map[string]k8sDoc{}
	files, _ := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	for _, f := range files {
		dec := yaml.NewDecoder(strings.NewReader(read(t, f)))
		for {
			var d k8sDoc
			err := dec.Decode(&d)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			docs[d["kind"].(string)] = d
		}
	}
	return docs
}

// at walks a YAML document by keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not a map", path)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: not a list long enough", path)
			}
			v = l[k]
		}
	}
	return v
}

func TestKubernetesManifests(t *testing.T) {
	docs := k8sDocs(t)
	for _, kind := range []string{"StatefulSet", "Service", "Secret", "NetworkPolicy", "Kustomization"} {
		if docs[kind] == nil {
			t.Fatalf("no %s manifest", kind)
		}
	}
	ss := docs["StatefulSet"]
	if at(t, ss, "spec", "replicas") != 1 {
		t.Error("StatefulSet replicas must be 1 (bbolt is single-writer)")
	}
	if at(t, ss, "spec", "volumeClaimTemplates", 0, "metadata", "name") != "data" {
		t.Error("no data PVC template")
	}
	pod := at(t, ss, "spec", "template", "spec")
	if at(t, pod, "securityContext", "runAsNonRoot") != true {
		t.Error("pod does not run as non-root")
	}
	c := at(t, pod, "containers", 0)
	if at(t, c, "securityContext", "readOnlyRootFilesystem") != true || at(t, c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Error("container root filesystem is writable or privilege escalation allowed")
	}
	if at(t, c, "livenessProbe", "httpGet", "path") != "/healthz" || at(t, c, "readinessProbe", "httpGet", "path") != "/readyz" {
		t.Error("probes are not /healthz and /readyz")
	}
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		m := e.(map[string]any)
		env[m["name"].(string)], _ = m["value"].(string)
	}
	if d := env["BATCHHOOK_DATA_DIR"]; !strings.HasPrefix(d, "/data/") || at(t, pod, "securityContext", "fsGroupChangePolicy") != "OnRootMismatch" {
		t.Errorf("BATCHHOOK_DATA_DIR = %q: with fsGroup the volume root is group-writable, which batchhook refuses; "+
			"want a subdirectory of /data and fsGroupChangePolicy OnRootMismatch", d)
	}
	if env["BATCHHOOK_ADMIN_ADDR"] != "0.0.0.0:9090" {
		t.Errorf("BATCHHOOK_ADMIN_ADDR = %q, want 0.0.0.0:9090 inside the pod (DECISIONS 13)", env["BATCHHOOK_ADMIN_ADDR"])
	}
	for _, k := range []string{"BATCHHOOK_SIGNING_SECRET_FILE", "BATCHHOOK_API_KEY_FILE", "BATCHHOOK_ADMIN_TOKEN_FILE", "BATCHHOOK_API_BASE_URL"} {
		if env[k] == "" {
			t.Errorf("%s not set", k)
		}
	}
	for _, k := range []string{"BATCHHOOK_SIGNING_SECRET", "BATCHHOOK_API_KEY", "BATCHHOOK_ADMIN_TOKEN"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s given as a plain value; use the _FILE form", k)
		}
	}
	if at(t, docs["Service"], "spec", "ports", 0, "targetPort") != "webhook" {
		t.Error("Service does not target the webhook port")
	}
}

// TestEnvExampleListsEveryVariable: the example names every variable the
// daemon reads, and its values for those with defaults are the defaults.
func TestEnvExampleListsEveryVariable(t *testing.T) {
	text := read(t, "batchhook.env.example")
	seen := map[string]string{}
	re := regexp.MustCompile(`(?m)^#? ?(BATCHHOOK_[A-Z_]+)=(.*)$`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		seen[m[1]] = m[2]
	}
	for _, v := range config.Variables() {
		if _, ok := seen[v]; !ok {
			t.Errorf("%s missing from batchhook.env.example", v)
		}
	}
	d := config.Defaults()
	for k, want := range map[string]string{
		"BATCHHOOK_LISTEN_ADDR": d.ListenAddr, "BATCHHOOK_PAGE_LIMIT": strconv.Itoa(d.PageLimit),
		"BATCHHOOK_FETCH_WORKERS": strconv.Itoa(d.FetchWorkers), "BATCHHOOK_ADMIN_ADDR": d.AdminAddr,
		"BATCHHOOK_MAX_BODY_BYTES": strconv.FormatInt(d.MaxBodyBytes, 10), "BATCHHOOK_CURSOR_PARAM": d.CursorParam,
	} {
		if seen[k] != want {
			t.Errorf("%s=%q in the example, default is %q", k, seen[k], want)
		}
	}
}

// TestStaticBuild runs the Dockerfile's build command and checks that the
// binary needs no dynamic loader (distroless/static has none).
func TestStaticBuild(t *testing.T) {
	bin := staticBinary
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary asks for a dynamic loader")
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "batchhook ") {
		t.Fatalf("static binary: %q %v", out, err)
	}
}

// TestKubernetesManifestsLint runs yamllint (strict default rules, with
// longer lines and no document-start marker) where it is installed; .ci/run
// installs it from Debian when it can.
func TestKubernetesManifestsLint(t *testing.T) {
	if _, err := exec.LookPath("yamllint"); err != nil {
		t.Skip("yamllint not installed (apt-get install yamllint)")
	}
	conf := "{extends: default, rules: {line-length: {max: 120}, document-start: disable, comments: {min-spaces-from-content: 1}}}"
	out, err := exec.Command("yamllint", "-s", "-d", conf, "kubernetes").CombinedOutput()
	if err != nil {
		t.Fatalf("yamllint: %v\n%s", err, out)
	}
}
