package powerloss

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Available reports what this machine lacks to mount the file system, or
// nil: root (the mount is made without fusermount), /dev/fuse, and a
// kernel that lets this process mount (a probe mount, undone at once).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: the mount is made directly, without fusermount, which needs root")
	}
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("no usable /dev/fuse: %w", err)
	}
	dev.Close()
	dir, err := os.MkdirTemp("", "powerloss-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	fs, err := Mount(dir, Options{})
	if err != nil {
		return fmt.Errorf("cannot mount FUSE here: %w", err)
	}
	return fs.Unmount()
}

// MountTest mounts a file system on a new temporary directory for the
// test and unmounts it when the test ends (register the processes that
// use it after this call, so that their cleanups kill them first). A
// machine that cannot mount skips the test, unless the environment sets
// CI: there the power-loss tests must run, and a skip would hide that
// they did not.
func MountTest(t testing.TB, opts Options) *FS {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the power-loss tests cannot run, and CI is set: %v (they need root and /dev/fuse; .ci/run says so)", err)
		}
		t.Skipf("the power-loss tests need root and /dev/fuse: %v", err)
	}
	fs, err := Mount(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return fs
}
