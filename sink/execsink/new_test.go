package execsink

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
)

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "load-results")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"empty", Options{}, "exec sink: command is empty"},
		{"empty argv0", Options{Command: []string{""}}, "exec sink: command is empty"},
		{"not in PATH", Options{Command: []string{"batchhook-no-such-command"}}, `exec sink: command "batchhook-no-such-command": executable file not found in $PATH`},
		{"missing", Options{Command: []string{filepath.Join(dir, "nope")}}, filepath.Join(dir, "nope") + `": no such file or directory`},
		{"not executable", Options{Command: []string{notExec}}, notExec + `": permission denied`},
		{"NUL", Options{Command: []string{"/bin/sh", "a\x00b"}}, "NUL byte"},
		{"negative timeout", Options{Command: []string{"/bin/sh"}, Timeout: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.o)
			if err == nil {
				t.Fatalf("New = %+v, want an error", s)
			}
			if !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 200 {
				t.Errorf("error %q, want it to contain %q and be short", err, tc.want)
			}
		})
	}
}

func TestNewResolvesAndDefaults(t *testing.T) {
	s := newSink(t, Options{Command: []string{"sh", "-c", "exit 0"}})
	if !filepath.IsAbs(s.path) || filepath.Base(s.path) != "sh" {
		t.Errorf("path = %q, want sh resolved to an absolute path", s.path)
	}
	if s.argv[0] != "sh" {
		t.Errorf("argv[0] = %q, want it as configured", s.argv[0])
	}
	if s.timeout != DefaultTimeout {
		t.Errorf("timeout = %s", s.timeout)
	}
	// A relative path is made absolute: the command runs in "/".
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("run.sh", []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s = newSink(t, Options{Command: []string{"./run.sh"}})
	if s.path != filepath.Join(dir, "run.sh") {
		t.Errorf("path = %q", s.path)
	}
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Delivered, "", "")
}

func TestStartFailureIsRetriedAsLocal(t *testing.T) {
	cmd := script(t, "touch.sh")
	s := newSink(t, Options{Command: []string{cmd, t.TempDir()}})
	if err := os.Chmod(cmd, 0o600); err != nil {
		t.Fatal(err)
	}
	got := s.Deliver(context.Background(), export(t), nil)
	wantResult(t, got, sink.Retry, "local", "")
	if !strings.Contains(got.Reason, "permission denied") {
		t.Errorf("reason %q", got.Reason)
	}
	if err := os.Remove(cmd); err != nil {
		t.Fatal(err)
	}
	got = s.Deliver(context.Background(), export(t), nil)
	wantResult(t, got, sink.Retry, "local", "")
	if !strings.Contains(got.Reason, "no such file or directory") {
		t.Errorf("reason %q", got.Reason)
	}
}

func TestRelativeExportDirIsRefused(t *testing.T) {
	out := t.TempDir()
	s := newSink(t, Options{Command: []string{script(t, "touch.sh"), out}})
	wantResult(t, s.Deliver(context.Background(), sink.Export{BatchID: "b_1", Dir: "exports/b_1"}, nil),
		sink.Failed, "local", "export directory is not an absolute path")
	if _, err := os.Stat(filepath.Join(out, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the command ran (stat: %v)", err)
	}
}
