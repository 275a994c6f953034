package e2e

// Start-up refusals of the real binary: each
// configuration that would expose the daemon or its secrets stops it with
// a line that names what to fix and never prints the secret.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
	"github.com/batchhook/batchhook/lookupsim"
)

// runServe runs batchhook serve with env (plus the required settings, a
// fresh DATA_DIR and loopback listeners unless env sets them) and waits
// for it to exit; it fails the test if the daemon starts serving instead.
func runServe(t *testing.T, argv []string, env map[string]string) (code int, stderr, stdout string) {
	t.Helper()
	base := map[string]string{"PATH": os.Getenv("PATH"), "BATCHHOOK_SIGNING_SECRET": "s", "BATCHHOOK_API_KEY": "k",
		"BATCHHOOK_API_BASE_URL": "http://127.0.0.1:1", "BATCHHOOK_DATA_DIR": t.TempDir(),
		"BATCHHOOK_LISTEN_ADDR": "127.0.0.1:0", "BATCHHOOK_ADMIN_ADDR": "127.0.0.1:0"}
	for k, v := range env {
		base[k] = v
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	for k, v := range base {
		if v != "\x00unset" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var errBuf, outBuf testutil.SyncBuffer
	cmd.Stderr, cmd.Stdout = &errBuf, &outBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			code = 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return code, errBuf.String(), outBuf.String()
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("batchhook neither started nor exited in 20 s:\n%s%s", errBuf.String(), outBuf.String())
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(outBuf.String(), `"event":"started"`) {
				cmd.Process.Kill()
				<-done
				t.Fatalf("batchhook started instead of refusing:\n%s", outBuf.String())
			}
		}
	}
}

func stderrLine(t *testing.T, stderr string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want one:\n%s", len(lines), stderr)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Fatalf("stderr %q does not say %q", lines[0], w)
		}
	}
}

// TestWritableDataDirIsRefusedOrRepaired: the start-up check of the data
// directory's mode.
func TestWritableDataDirIsRefusedOrRepaired(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := runServe(t, []string{binary, "serve"}, map[string]string{"BATCHHOOK_DATA_DIR": data})
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, stderr)
	}
	stderrLine(t, stderr, "BATCHHOOK_DATA_DIR", "0777", "BATCHHOOK_REPAIR_PERMISSIONS")

	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_DATA_DIR"] = data
	s.env["BATCHHOOK_REPAIR_PERMISSIONS"] = "true"
	d := startDaemon(t, s.addr, s.env)
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir after repair: %v %v", st.Mode(), err)
	}
	if !strings.Contains(d.out.String(), `"event":"permissions_repaired"`) || !strings.Contains(d.out.String(), `"mode":"0777"`) {
		t.Fatalf("no permissions_repaired warning:\n%s", d.out.String())
	}
	d.stop(t)
}

// TestBaseURLCredentialsAreRefusedUnprinted: a base URL with credentials
// in it stops the start, and the credentials are not printed.
func TestBaseURLCredentialsAreRefusedUnprinted(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://user:Pa55Xy9q@127.0.0.1:1", "http://user:Pa55Xy9q@[::1"} {
		code, stderr, stdout := runServe(t, []string{binary, "serve"}, map[string]string{"BATCHHOOK_API_BASE_URL": u})
		if code != 2 {
			t.Fatalf("%s: exit %d, want 2; stderr %s", u, code, stderr)
		}
		stderrLine(t, stderr, "BATCHHOOK_API_BASE_URL")
		if strings.Contains(stderr+stdout, "Pa55Xy9q") {
			t.Fatalf("%s: the password was printed:\n%s%s", u, stderr, stdout)
		}
	}
	_, stderr, _ := runServe(t, []string{binary, "serve"}, map[string]string{"BATCHHOOK_API_BASE_URL": "http://user:Pa55Xy9q@127.0.0.1:1"})
	stderrLine(t, stderr, "BATCHHOOK_API_KEY")
}

// TestOversizedSecretFilesAreRefused: at start (a regular file
// over 4 KiB and /dev/zero, which must neither hang nor grow memory) and
// on SIGHUP (the old secret stays); a secret file others can read is
// accepted with a warning.
func TestOversizedSecretFilesAreRefused(t *testing.T) {
	t.Parallel()
	big := writeTemp(t, strings.Repeat("s", 4097))
	paths := []string{big}
	if os.Getenv("BATCHHOOK_TEST_SKIP_DEV_ZERO") == "" { // set only to run this test against an unfixed binary
		paths = append(paths, "/dev/zero")
	}
	for _, p := range paths {
		start := time.Now()
		code, stderr, _ := runServe(t, []string{binary, "serve"}, map[string]string{
			"BATCHHOOK_SIGNING_SECRET": "\x00unset", "BATCHHOOK_SIGNING_SECRET_FILE": p})
		if code != 2 || time.Since(start) > 10*time.Second {
			t.Fatalf("%s: exit %d after %s, want 2 at once; stderr %s", p, code, time.Since(start), stderr)
		}
		stderrLine(t, stderr, "BATCHHOOK_SIGNING_SECRET_FILE")
	}

	s := newSetup(t, lookupsim.Options{})
	if err := os.Chmod(s.env["BATCHHOOK_SIGNING_SECRET_FILE"], 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, s.addr, s.env)
	out := d.out.String()
	if !strings.Contains(out, `"event":"secret_file_readable"`) || !strings.Contains(out, `"variable":"BATCHHOOK_SIGNING_SECRET_FILE"`) {
		t.Fatalf("no secret_file_readable warning for a 0644 secret file:\n%s", out)
	}
	if err := os.WriteFile(s.env["BATCHHOOK_SIGNING_SECRET_FILE"], bytes.Repeat([]byte("n"), 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(d.out.String(), `"event":"secret_reload_failed"`) })
	if !strings.Contains(d.out.String(), "larger than 4096 bytes") {
		t.Fatalf("reload of an 8 KiB secret file:\n%s", d.out.String())
	}
	body := []byte(`{"event":"batch.completed","batch_id":"b_cap1","status":"failed","total_requested":1,"total_found":0,"total_not_found":0}`)
	if code, _ := postSigned(t, s.addr, body, 1); code != 200 {
		t.Fatalf("after the refused reload: %d, want the old secret kept", code)
	}
	d.stop(t)
}

// withLocalhostElsewhere returns argv that runs argv in a private mount
// namespace where /etc/hosts maps localhost to 0.0.0.0 (every interface),
// or skips the test when this machine cannot do that (not root, no
// unshare).
func withLocalhostElsewhere(t *testing.T, argv ...string) []string {
	t.Helper()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("0.0.0.0 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `mount --bind "$1" /etc/hosts && shift && exec "$@"`
	if out, err := exec.Command("unshare", "-m", "sh", "-c", script, "sh", hosts, "true").CombinedOutput(); err != nil {
		t.Skipf("cannot remap localhost in a private mount namespace (unshare -m, mount --bind): %v %s", err, out)
	}
	return append([]string{"unshare", "-m", "sh", "-c", script, "sh", hosts}, argv...)
}

// TestAdminLoopbackIsJudgedOnTheBoundAddress: with localhost
// resolving to 0.0.0.0, ADMIN_ADDR=localhost:0 without a token binds every
// interface: the daemon refuses to start. The bench refuses such a target
// too.
func TestAdminLoopbackIsJudgedOnTheBoundAddress(t *testing.T) {
	t.Parallel()
	argv := withLocalhostElsewhere(t, binary, "serve")
	code, stderr, stdout := runServe(t, argv, map[string]string{"BATCHHOOK_ADMIN_ADDR": "localhost:0"})
	if code == 0 {
		t.Fatalf("exit 0; stderr %s", stderr)
	}
	stderrLine(t, stderr, "BATCHHOOK_ADMIN_TOKEN", "BATCHHOOK_ADMIN_ADDR", "not a loopback address")
	if strings.Contains(stdout, `"event":"started"`) {
		t.Fatalf("the daemon served:\n%s", stdout)
	}

	secret := writeTemp(t, "s")
	argv = withLocalhostElsewhere(t, binary, "bench", "--url", "http://localhost:1/hook", "--secret-file", secret, "--count", "1", "-c", "1")
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a loopback address") {
		t.Fatalf("bench against localhost resolving to 0.0.0.0: %v\n%s", err, out)
	}
}

// TestSignRefusesAnOversizedSecretFile: the CLI reads secret files with the
// daemon's rule, cap included.
func TestSignRefusesAnOversizedSecretFile(t *testing.T) {
	t.Parallel()
	paths := []string{writeTemp(t, strings.Repeat("s", 4097))}
	if os.Getenv("BATCHHOOK_TEST_SKIP_DEV_ZERO") == "" {
		paths = append(paths, "/dev/zero")
	}
	for _, p := range paths {
		for _, cmdName := range []string{"sign", "verify"} {
			args := []string{cmdName, "--secret-file", p}
			if cmdName == "verify" {
				args = append(args, "--signature", "x")
			}
			cmd := exec.Command(binary, args...)
			cmd.Stdin = strings.NewReader("{}")
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s --secret-file %s did not return in 10 s", cmdName, p)
			}
			if err == nil || !strings.Contains(string(out), p) {
				t.Fatalf("%s --secret-file %s: %v %s", cmdName, p, err, out)
			}
		}
	}
}
