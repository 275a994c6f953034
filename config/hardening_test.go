package config_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/config"
)

// TestBaseURLWithCredentialsIsRefused: userinfo in API_BASE_URL would be
// printed in the started line; it is refused, the error points to the key
// variables, and no error quotes any part of the credentials.
func TestBaseURLWithCredentialsIsRefused(t *testing.T) {
	for _, raw := range []string{
		"http://user:Pa55Xy9q@provider.example",
		"https://user:Pa55Xy9q@provider.example:8443/base",
		"https://Pa55Xy9q@provider.example",
		"https://user:Pa55Xy9q@provider.example/?q=1",
		"ftp://user:Pa55Xy9q@provider.example",
		"http://user:Pa55%zzXy9q@provider.example",
		"http://user:Pa55 Xy9q@provider.example",
		"http://[::1:user:Pa55Xy9q@x",
		"https://provider.example/?api_key=Pa55Xy9q",
		"https://provider.example/#Pa55Xy9q",
		"ftp://provider.example/?key=Pa55Xy9q",
	} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_API_BASE_URL", raw)
		_, err := config.Load(config.TestSinks)
		if err == nil {
			t.Fatalf("%s: accepted", raw)
		}
		msg := err.Error()
		if !namesVar(msg, "BATCHHOOK_API_BASE_URL") {
			t.Errorf("%s: error %q does not name BATCHHOOK_API_BASE_URL", raw, msg)
		}
		if strings.Contains(msg, "Pa55") || strings.Contains(msg, "Xy9q") || strings.Contains(msg, "%zz") {
			t.Errorf("%s: error %q shows the credentials", raw, msg)
		}
	}
	requiredEnv(t)
	t.Setenv("BATCHHOOK_API_BASE_URL", "https://user:Pa55Xy9q@provider.example")
	if _, err := config.Load(config.TestSinks); err == nil || !namesVar(err.Error(), "BATCHHOOK_API_KEY") || !namesVar(err.Error(), "BATCHHOOK_API_KEY_FILE") {
		t.Fatalf("error %v does not point to BATCHHOOK_API_KEY / _FILE", err)
	}
}

// TestSecretFileIsCapped: a secret file holds at most 4 KiB; a bigger one,
// a device or a FIFO is refused at once with the variable named, without
// reading it whole or waiting for a writer.
func TestSecretFileIsCapped(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact")
	os.WriteFile(exact, []byte(strings.Repeat("s", config.MaxSecretBytes)), 0o600)
	withLF := filepath.Join(dir, "with-lf")
	os.WriteFile(withLF, []byte(strings.Repeat("s", config.MaxSecretBytes)+"\n"), 0o600)
	over := filepath.Join(dir, "over")
	os.WriteFile(over, []byte(strings.Repeat("s", config.MaxSecretBytes+1)), 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := config.ReadSecretFile(exact); err != nil || len(s) != config.MaxSecretBytes {
		t.Fatalf("a %d-byte secret: %d bytes, %v", config.MaxSecretBytes, len(s), err)
	}
	for _, path := range []string{withLF, over, "/dev/zero", "/dev/urandom", fifo} {
		requiredEnv(t)
		os.Unsetenv("BATCHHOOK_SIGNING_SECRET")
		t.Setenv("BATCHHOOK_SIGNING_SECRET_FILE", path)
		done := make(chan error, 1)
		go func() { _, err := config.Load(config.TestSinks); done <- err }()
		select {
		case err := <-done:
			if err == nil || !namesVar(err.Error(), "BATCHHOOK_SIGNING_SECRET_FILE") {
				t.Fatalf("%s: Load = %v, want an error naming BATCHHOOK_SIGNING_SECRET_FILE", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Load did not return within 5 s", path)
		}
	}
}

// TestSecretFileReadableByOthersWarns: a 0644 secret file is accepted with
// a warning naming its variable; a 0600 or 0400 one gives none.
func TestSecretFileReadableByOthersWarns(t *testing.T) {
	for mode, warn := range map[os.FileMode]bool{0o600: false, 0o400: false, 0o640: true, 0o644: true, 0o604: true} {
		requiredEnv(t)
		p := writeFile(t, "k\n")
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		os.Unsetenv("BATCHHOOK_API_KEY")
		t.Setenv("BATCHHOOK_API_KEY_FILE", p)
		c := mustLoad(t)
		if got := len(c.Warnings) == 1; got != warn {
			t.Fatalf("mode %04o: warnings %+v, want a warning: %v", mode, c.Warnings, warn)
		}
		if warn {
			w := c.Warnings[0]
			if w.Event != "secret_file_readable" || w.Variable != "BATCHHOOK_API_KEY_FILE" || w.Path != p || w.Mode != mode {
				t.Fatalf("mode %04o: warning %+v", mode, w)
			}
		}
	}
}

// TestWritableDirectoriesAreRefusedOrRepaired: a data or export directory
// that group or others can write is refused, naming the variable and the
// mode; with BATCHHOOK_REPAIR_PERMISSIONS=true it becomes 0700, with a
// warning.
func TestWritableDirectoriesAreRefusedOrRepaired(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode os.FileMode
	}{{"DATA_DIR", 0o777}, {"DATA_DIR", 0o770}, {"EXPORT_DIR", 0o702}, {"EXPORT_DIR", 0o1777}} {
		requiredEnv(t)
		data, exports := t.TempDir(), t.TempDir()
		t.Setenv("BATCHHOOK_DATA_DIR", data)
		t.Setenv("BATCHHOOK_EXPORT_DIR", exports)
		dir := map[string]string{"DATA_DIR": data, "EXPORT_DIR": exports}[tc.name]
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(config.TestSinks)
		if err == nil || !namesVar(err.Error(), "BATCHHOOK_"+tc.name) || !strings.Contains(err.Error(), "0"+fmtMode(tc.mode)) {
			t.Fatalf("%s %04o: Load = %v, want an error naming the variable and the mode", tc.name, tc.mode.Perm(), err)
		}
		t.Setenv("BATCHHOOK_REPAIR_PERMISSIONS", "true")
		c := mustLoad(t)
		st, _ := os.Stat(dir)
		if st.Mode().Perm() != 0o700 || len(c.Warnings) != 1 || c.Warnings[0].Event != "permissions_repaired" ||
			c.Warnings[0].Variable != "BATCHHOOK_"+tc.name || c.Warnings[0].Mode != tc.mode.Perm() {
			t.Fatalf("%s repaired: mode %04o, warnings %+v", tc.name, st.Mode().Perm(), c.Warnings)
		}
	}
	// 0700, 0750, 0755 and a directory not created yet are fine.
	for _, mode := range []os.FileMode{0o700, 0o750, 0o755} {
		requiredEnv(t)
		data := t.TempDir()
		os.Chmod(data, mode)
		t.Setenv("BATCHHOOK_DATA_DIR", data)
		if c := mustLoad(t); len(c.Warnings) != 0 {
			t.Fatalf("%04o: warnings %+v", mode, c.Warnings)
		}
	}
	requiredEnv(t)
	t.Setenv("BATCHHOOK_DATA_DIR", filepath.Join(t.TempDir(), "not-yet"))
	mustLoad(t)
}

func fmtMode(m os.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

// TestAdminLoopbackIsDecidedOnTheBoundAddress: config refuses early only
// what can never be loopback; a name passes to the daemon, which judges
// the address it bound.
func TestAdminLoopbackIsDecidedOnTheBoundAddress(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9090": true, "[::1]:9090": true, "localhost:9090": true, "admin.internal:9090": true,
		"0.0.0.0:9090": false, ":9090": false, "[::]:9090": false, "192.0.2.1:9090": false,
	} {
		requiredEnv(t)
		t.Setenv("BATCHHOOK_ADMIN_ADDR", addr)
		if _, err := config.Load(config.TestSinks); (err == nil) != ok {
			t.Errorf("ADMIN_ADDR=%s without a token: %v", addr, err)
		}
	}
	for _, tc := range []struct {
		ip    string
		token bool
		ok    bool
	}{
		{"127.0.0.1", false, true}, {"127.8.9.10", false, true}, {"::1", false, true}, {"::ffff:127.0.0.1", false, true},
		{"0.0.0.0", false, false}, {"::", false, false}, {"192.0.2.1", false, false},
		{"0.0.0.0", true, true},
	} {
		err := config.CheckAdminBound(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 9090}, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("bound %s, token %v: %v", tc.ip, tc.token, err)
		}
		if err != nil && (!namesVar(err.Error(), "BATCHHOOK_ADMIN_TOKEN") || !strings.Contains(err.Error(), tc.ip)) {
			t.Errorf("bound %s: error %q does not name the token variable and the address", tc.ip, err)
		}
	}
}
