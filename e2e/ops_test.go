package e2e

// End-to-end tests of the operator surface: admin API, metrics, CLI,
// secret reload, shutdown. The real binary against the simulator.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
)

const adminToken = "admin-token-of-the-e2e-tests"

// cli runs the binary with args against the daemon's admin API.
func cli(t *testing.T, d *daemonProc, token string, args ...string) (string, string, int) {
	t.Helper()
	return runCLIWith(t, d, token, 30*time.Second, args...)
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAdminAPIMetricsAndCLI(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_ADMIN_TOKEN"] = adminToken
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(60, 11))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, id, d, 20*time.Second)
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"batch_exported"`) })
	bad := []byte(`{"event":"batch.completed","batch_id":"b_bad","status":"unknown"}`)
	if code, _ := postSigned(t, s.addr, bad, 1); code != 400 {
		t.Fatalf("invalid body: %d", code)
	}
	postSigned(t, s.addr, []byte("{}"), 1) // 400 too: no event
	forged, _ := http.Post("http://"+s.addr+e2ePath, "application/json", strings.NewReader("{}"))
	forged.Body.Close()

	// Probes need no token; everything else does.
	if code, body := get(t, d.admin+"/healthz", ""); code != 200 {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, d.admin+"/readyz", ""); code != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	for _, path := range []string{"/metrics", "/admin/batches", "/admin/batches/" + id, "/admin/quarantine"} {
		if code, _ := get(t, d.admin+path, ""); code != 401 {
			t.Fatalf("%s without token: %d, want 401", path, code)
		}
		if code, _ := get(t, d.admin+path, "wrong"); code != 401 {
			t.Fatalf("%s with a wrong token: %d, want 401", path, code)
		}
	}
	code, metrics := get(t, d.admin+"/metrics", adminToken)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`batchhook_webhook_requests_total{outcome="accepted"} 1`,
		`batchhook_webhook_requests_total{outcome="invalid"} 2`,
		`batchhook_webhook_requests_total{outcome="unauthorized"} 1`,
		`batchhook_batches{state="exported"} 1`,
		`batchhook_batches{state="queued"} 0`,
		`batchhook_fetch_pages_total 2`,
		`batchhook_export_items_total 60`,
		`batchhook_queue_oldest_seconds 0`,
		`batchhook_webhook_ack_seconds_bucket`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// The CLI: list, show, JSON, errors.
	out, errOut, code := cli(t, d, adminToken, "batches", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "exported") || !strings.HasPrefix(out, "BATCH") {
		t.Fatalf("batches list: %d\n%s%s", code, out, errOut)
	}
	out, _, code = cli(t, d, adminToken, "batches", "show", id, "--json")
	var view map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &view) != nil || view["state"] != "exported" || view["items"] != float64(60) {
		t.Fatalf("batches show --json: %d %s", code, out)
	}
	if strings.Contains(out, `"cpf"`) || strings.Contains(out, adminToken) {
		t.Fatal("the admin API returned an item or a secret")
	}
	if _, errOut, code = cli(t, d, "", "batches", "list"); code == 0 || !strings.Contains(errOut, "BATCHHOOK_ADMIN_TOKEN") {
		t.Fatalf("list without token: %d %s", code, errOut)
	}
	if _, errOut, code = cli(t, d, adminToken, "batches", "show", "b_nope"); code == 0 || !strings.Contains(errOut, "404") {
		t.Fatalf("show unknown: %d %s", code, errOut)
	}
	out, _, code = cli(t, d, adminToken, "quarantine", "list")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "status") {
		t.Fatalf("quarantine list: %d\n%s", code, out)
	}
	qid := strings.Fields(strings.Split(out, "\n")[1])[0]
	out, _, code = cli(t, d, adminToken, "quarantine", "show", qid)
	if code != 0 || !strings.Contains(out, "reason:") {
		t.Fatalf("quarantine show: %d\n%s", code, out)
	}

	// Refetch replaces the export; a second refetch while it runs is refused.
	before, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
	pages := s.sim.Stats().PagesServed
	out, errOut, code = cli(t, d, adminToken, "batches", "refetch", id)
	if code != 0 || !strings.Contains(out, "queued for refetch") {
		t.Fatalf("refetch: %d %s %s", code, out, errOut)
	}
	waitFor(t, func() bool { return strings.Count(d.out.String(), `"event":"batch_exported"`) == 2 })
	after, _ := os.ReadFile(filepath.Join(s.exports, id, "manifest.json"))
	if bytes.Equal(before, after) || s.sim.Stats().PagesServed <= pages {
		t.Fatal("refetch did not fetch and replace the export")
	}
	s.checkExport(t, id)
	d.stop(t)
}

func TestSecretReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	body := []byte(`{"event":"batch.completed","batch_id":"b_rot1","status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":"2026-11-22T10:00:00Z"}`)
	if code, _ := postSigned(t, s.addr, body, 1); code != 200 {
		t.Fatalf("before rotation: %d", code)
	}
	// Rotate: the provider re-registers and the new secret replaces the old at once.
	newSecret := "rotated secret"
	if err := os.WriteFile(s.env["BATCHHOOK_SIGNING_SECRET_FILE"], []byte(newSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"secret_reloaded"`) })
	body2 := bytes.Replace(body, []byte("b_rot1"), []byte("b_rot2"), 1)
	if code, _ := postSigned(t, s.addr, body2, 1); code != 401 {
		t.Fatalf("old secret after rotation: %d, want 401", code)
	}
	if code := postWithSecret(t, s.addr, body2, newSecret); code != 200 {
		t.Fatalf("new secret after rotation: %d, want 200", code)
	}
	// A failed reload (empty file) keeps the current secret.
	os.WriteFile(s.env["BATCHHOOK_SIGNING_SECRET_FILE"], nil, 0o600)
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"secret_reload_failed"`) })
	body3 := bytes.Replace(body, []byte("b_rot1"), []byte("b_rot3"), 1)
	if code := postWithSecret(t, s.addr, body3, newSecret); code != 200 {
		t.Fatalf("after a failed reload: %d, want the current secret kept", code)
	}
	d.stop(t) // exit code 0 on SIGTERM is checked by stop
	// The whole log, once the daemon is gone.
	if strings.Contains(d.out.String(), newSecret) || strings.Contains(d.out.String(), e2eSecret) {
		t.Fatal("a secret reached the logs")
	}
}

func postWithSecret(t *testing.T, addr string, body []byte, secret string) int {
	t.Helper()
	cmd := exec.Command(binary, "sign", "--secret-file", writeTemp(t, secret))
	cmd.Stdin = bytes.NewReader(body)
	sig, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set("x-service-webhook-signature", strings.TrimSpace(string(sig)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSignAndVerifyMatchOpenSSLVectors(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "internal", "signature", "testdata")
	want := "MTM0MjUzZDYwZGI3OGRmYTRiMjE1OTk1YmY1YjlhMTE3MzY3MTc1MDRjMWQ4OGI2MTdlYjEwYjJmOGY0ZGI2Yg==" // openssl, see testdata/README.md
	out, err := exec.Command(binary, "sign", "--secret-file", filepath.Join(dir, "secret1.txt"), filepath.Join(dir, "body1.json")).Output()
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("sign = %q, %v; want %s", out, err, want)
	}
	cases := []struct {
		sig, want string
		code      int
	}{
		{want, "valid", 0},
		{"E0JT1g23jfpLIVmVv1uaEXNnF1BMHYi2F+sQsvj022s=", "44 characters", 1},
		{"sha256=" + want, "sha256=", 1},
		{strings.Repeat("A", 88), "does not match", 1},
	}
	for _, c := range cases {
		cmd := exec.Command(binary, "verify", "--secret-file", filepath.Join(dir, "secret1.txt"), "--signature", c.sig, filepath.Join(dir, "body1.json"))
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("verify %s…: exit %d %q, want %d and %q", c.sig[:10], code, out, c.code, c.want)
		}
	}
}

func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	if err := exec.Command(binary, "healthcheck", "--admin", d.admin).Run(); err != nil {
		t.Fatalf("healthcheck on a running daemon: %v", err)
	}
	if err := exec.Command(binary, "healthcheck", "--ready", "--admin", d.admin).Run(); err != nil {
		t.Fatalf("readiness check on a running daemon: %v", err)
	}
	d.stop(t)
	if err := exec.Command(binary, "healthcheck", "--admin", d.admin).Run(); err == nil {
		t.Fatal("healthcheck succeeded with the daemon stopped")
	}
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	// A request whose body never completes keeps the graceful drain waiting
	// (up to 10 s).
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", e2ePath)
	// The request keeps the drain waiting only once the daemon has the
	// connection: a connection still in the kernel's backlog is dropped
	// with the listener, and the first signal would end the daemon.
	waitFor(t, func() bool { return holdsConn(t, d.cmd.Process.Pid, conn) })
	d.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"stopping"`) })
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 130 {
			// Say what ended the drain early: a reply or a close on the
			// stalled request, and the daemon's last lines.
			_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			got, rerr := io.ReadAll(conn)
			t.Fatalf("exit after a second signal: %v, want code 130; the stalled request got %q (%v); log tail:\n%s",
				err, got, rerr, lastLines(d.out.String(), 15))
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("second signal took %s", time.Since(start))
		}
	case <-time.After(8 * time.Second):
		t.Fatal("a second signal did not exit at once")
	}
}

// holdsConn reports whether process pid has accepted conn (a loopback TCP
// connection this test dialed): whether one of its descriptors is the
// socket whose local end is conn's remote address and whose remote end is
// conn's local address (/proc/net/tcp names it by inode).
func holdsConn(t *testing.T, pid int, conn net.Conn) bool {
	t.Helper()
	port := func(a net.Addr) string { return fmt.Sprintf(":%04X", a.(*net.TCPAddr).Port) }
	local, remote := port(conn.RemoteAddr()), port(conn.LocalAddr())
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("read /proc/net/tcp: %v", err)
	}
	inode := ""
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 10 && strings.HasSuffix(f[1], local) && strings.HasSuffix(f[2], remote) {
			inode = f[9]
		}
	}
	if inode == "" || inode == "0" {
		return false
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && target == "socket:["+inode+"]" {
			return true
		}
	}
	return false
}

func TestSIGTERMDuringAFetchLeavesAResumableCheckpoint(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{Faults: lookupsim.Faults{SlowPage: 80 * time.Millisecond}})
	s.env["BATCHHOOK_PAGE_LIMIT"] = "25"
	d := startDaemon(t, s.addr, s.env)
	id, err := s.sim.Submit(lookupsim.SampleCPFs(500, 21))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.sim.Stats().PagesServed >= 5 })
	d.stop(t) // SIGTERM; stop fails the test unless the exit code is 0
	if _, err := os.Stat(filepath.Join(s.exports, id)); err == nil {
		t.Fatal("exported before the stop; the test proves nothing")
	}
	d2 := startDaemon(t, s.addr, s.env)
	s.waitExport(t, id, d2, 30*time.Second)
	s.checkExport(t, id)
	if served := s.sim.Stats().PagesServed; served > 20+1 {
		t.Fatalf("%d pages served for a 20-page batch: the stop did not leave a checkpoint to resume from", served)
	}
	d2.stop(t)
}

// lastLines is the last n lines of s, for a failure message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
