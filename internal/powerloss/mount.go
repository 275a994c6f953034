package powerloss

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// releaseWait bounds how long Cut and Unmount wait for the kernel to
// release the old mount once the power is off: the killed processes exit
// as soon as their pending requests fail, so only a process left running
// on the mount makes it run out.
const releaseWait = time.Minute

// Options shape a mount.
type Options struct {
	// RootMode is the permission bits of the mount's root (0o755 when zero).
	RootMode os.FileMode
	// Debug logs every FUSE request and reply to Logger.
	Debug bool
	// Logger receives go-fuse's messages (none when nil).
	Logger *log.Logger
}

// FS is a mounted power-loss file system. Its methods are safe for
// concurrent use.
type FS struct {
	dir  string
	opts Options

	mu   sync.Mutex
	vol  *volume
	base int64 // mutating requests served by earlier mounts
	cuts int
}

// Mount mounts an empty power-loss file system on mountpoint, an existing
// directory. It needs root (the mount is made directly, without
// fusermount) and /dev/fuse; Available says whether this machine has
// them.
func Mount(mountpoint string, opts Options) (*FS, error) {
	dir, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	perm := uint32(opts.RootMode.Perm())
	if perm == 0 {
		perm = 0o755
	}
	f := &FS{dir: dir, opts: opts}
	vol, err := f.mount(newTree(perm, uint32(os.Geteuid()), uint32(os.Getegid())))
	if err != nil {
		return nil, err
	}
	f.vol = vol
	return f, nil
}

// mount serves t on the mount point.
func (f *FS) mount(t *tree) (*volume, error) {
	v := newVolume(t)
	logger := f.opts.Logger
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	srv, err := fuse.NewServer(v, f.dir, &fuse.MountOptions{
		DirectMount: true, DirectMountStrict: true, // no fusermount: root mounts it itself
		FsName: "powerloss", Name: "powerloss",
		// The kernel checks permissions against the modes served, as on a
		// disk; root passes anyway.
		Options:            []string{"default_permissions"},
		DisableReadDirPlus: true, // listings hand out no references
		DisableXAttrs:      true,
		// No auto_inval_data: the kernel would drop a file's cached pages
		// whenever fresh attributes show a new mtime, that is after nearly
		// every write, and a drop races a write in flight (see Open).
		// Every change comes through the kernel, so its cache is right.
		ExplicitDataCacheControl: true,
		Debug:                    f.opts.Debug,
		Logger:                   logger,
	})
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", f.dir, err)
	}
	v.server = srv
	go func() {
		srv.Serve()
		close(v.served)
	}()
	if err := srv.WaitMount(); err != nil {
		_, _ = v.powerOff()
		_ = syscall.Unmount(f.dir, syscall.MNT_DETACH)
		return nil, fmt.Errorf("mount %s: %w", f.dir, err)
	}
	return v, nil
}

// Dir returns the mount point (absolute).
func (f *FS) Dir() string { return f.dir }

// Ops returns how many mutating requests (write, truncate and other
// attribute changes, create, mkdir, symlink, link, unlink, rmdir, rename,
// fsync, fdatasync, fsync of a directory, fallocate) the file system has
// served since Mount, across cuts.
func (f *FS) Ops() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	return f.base + f.vol.ops
}

// Waiting returns how many requests wait on the current mount's freeze:
// a test that runs the code under test in its own process waits for one
// before it cuts, rather than for a moment.
func (f *FS) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vol.mu.Lock()
	defer f.vol.mu.Unlock()
	return f.vol.waiting
}

// Cuts returns how many times Cut has run.
func (f *FS) Cuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cuts
}

// FreezeAfter lets n more mutating requests through; every request after
// them (reads included) waits, as if the power had gone right then, until
// Cut or Unmount fails it. The channel it returns is closed when the
// freeze takes hold. It applies to the current mount only: a Cut lifts it.
func (f *FS) FreezeAfter(n int64) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vol.freezeAfter(n)
}

// Cut is the power cut. The caller first kills (SIGKILL) every process
// using the mount, then calls Cut, and only then waits for them to exit:
// a process waiting on a frozen request cannot die until the request is
// answered, and Cut answers it (EIO, changing nothing). Cut keeps only
// what was synced, unmounts (the kernel's page cache and dentries go with
// the mount, so a new mmap reads only durable bytes) and mounts the
// survivors again on the same directory.
func (f *FS) Cut() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.vol
	survivors, ops := old.powerOff()
	if survivors == nil {
		return errors.New("cut: the file system is unmounted")
	}
	f.base += ops
	if err := f.release(old); err != nil {
		return fmt.Errorf("cut: %w", err)
	}
	vol, err := f.mount(survivors)
	if err != nil {
		return fmt.Errorf("cut: %w", err)
	}
	f.vol = vol
	f.cuts++
	return nil
}

// Unmount turns the power off for good: whatever the file system held is
// gone. As for Cut, kill the processes using it first. Calling it again
// does nothing.
func (f *FS) Unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if survivors, _ := f.vol.powerOff(); survivors == nil {
		return nil
	}
	return f.release(f.vol)
}

// release detaches a powered-off volume from the mount point and waits
// until the kernel has let it go (the last process using it gone).
func (f *FS) release(v *volume) error {
	if err := syscall.Unmount(f.dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", f.dir, err)
	}
	select {
	case <-v.served:
		return nil
	case <-time.After(releaseWait):
		return fmt.Errorf("unmount %s: still in use %s after the power went off: a process left running on it (kill every one before Cut or Unmount)", f.dir, releaseWait)
	}
}
