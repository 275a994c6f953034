package powerloss

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// waitFor waits until cond holds, failing the test after a bound that
// only a failure reaches.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFreezeAfterStopsEverythingUntilTheCut(t *testing.T) {
	fs := MountTest(t, Options{})
	path := filepath.Join(fs.Dir(), "f")
	durableFile(t, path, "")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := fs.Ops()
	frozen := fs.FreezeAfter(3)
	results := make(chan error, 5)
	go func() {
		defer f.Close()
		// write, write, fsync: three mutating requests; the next write waits.
		for _, step := range []func() error{
			func() error { _, err := f.WriteString("a"); return err },
			func() error { _, err := f.WriteString("b"); return err },
			f.Sync,
			func() error { _, err := f.WriteString("c"); return err },
			func() error { _, err := f.WriteString("d"); return err },
		} {
			results <- step()
		}
	}()
	select {
	case <-frozen:
	case <-time.After(30 * time.Second):
		t.Fatal("the freeze did not take hold")
	}
	waitFor(t, "the fourth request waiting", func() bool { return fs.Waiting() > 0 })
	if len(results) != 3 {
		t.Fatalf("%d requests answered before the cut, want 3", len(results))
	}
	for i := 0; i < 3; i++ {
		if err := <-results; err != nil {
			t.Fatalf("request %d before the freeze: %v", i+1, err)
		}
	}
	if n := fs.Ops() - before; n != 3 {
		t.Fatalf("%d mutating requests counted, want 3", n)
	}
	// A read from elsewhere waits too.
	read := make(chan error, 1)
	go func() { _, err := os.Stat(filepath.Join(fs.Dir(), "other")); read <- err }()
	waitFor(t, "a stat waiting", func() bool { return fs.Waiting() > 1 })
	cut(t, fs)
	if err := <-results; !errors.Is(err, syscall.EIO) {
		t.Fatalf("the frozen write after the cut: %v, want EIO", err)
	}
	if err := <-read; !errors.Is(err, syscall.EIO) {
		t.Fatalf("the frozen stat after the cut: %v, want EIO", err)
	}
	want(t, path, "ab")
	if fs.Cuts() != 1 {
		t.Fatalf("Cuts() = %d", fs.Cuts())
	}
}
