package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/testutil"
)

// binary is the race-enabled batchhook that TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "batchhook-browser-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "batchhook")
	build := exec.Command("go", "build", "-race", "-o", binary, "../../cmd/batchhook")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build batchhook:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitBound bounds every wait for the daemon, the browser or a delivery:
// generous, since the machine may be loaded; a wait ends as soon as its
// condition holds.
const waitBound = 30 * time.Second

// daemonProc is one running batchhook serve.
type daemonProc struct {
	cmd   *exec.Cmd
	out   *testutil.SyncBuffer
	admin string // http://host:port of the admin listener
	done  chan error
}

// startDaemon runs the binary with env (and the admin listener on a
// loopback port of its choosing) and waits for its start line.
func startDaemon(t *testing.T, env map[string]string) *daemonProc {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0", "BATCHHOOK_ADMIN_ADDR=127.0.0.1:0"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	started := regexp.MustCompile(`"event":"started".*"admin_addr":"([^"]+)"`)
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) {
		if m := started.FindStringSubmatch(out.String()); m != nil {
			p.admin = "http://" + m[1]
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("batchhook exited at start: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("batchhook did not start:\n%s", out.String())
	return nil
}

// chromium returns the path of a Chromium or Chrome binary. A machine
// without one skips, unless CI is set: CI installs it, and browser tests
// that silently skip there would prove nothing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if st, err := os.Stat("/usr/bin/chromium"); err == nil && !st.IsDir() {
		return "/usr/bin/chromium"
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary, and CI is set: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("no chromium binary (apt-get install chromium)")
	return ""
}

// shots says where screenshots go: BATCHHOOK_SCREENSHOTS when set (the
// docs' images are made that way; a relative path is from the
// repository's root, not from this package's directory, where go test
// runs), else a temporary directory.
func shots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BATCHHOOK_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitFor polls cond until it returns nil, and fails the test with its
// last error after waitBound.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, waitBound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// contains reports whether s holds every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
