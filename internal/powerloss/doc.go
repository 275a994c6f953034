// Package powerloss is a file system, for tests only, that loses what a
// power cut loses. SIGKILL keeps the kernel's page cache, so killing a
// process never shows a missing fsync; a cut of this file system does.
//
// It is a FUSE file system held in memory. What the running processes see
// is an ordinary file system (mmap included: bbolt maps its file and
// writes with pwrite and fdatasync). Beside it, each node keeps its synced
// image, and a cut keeps only that:
//
//   - a file's data and size are durable up to its last fsync or
//     fdatasync (its mode, owner and times with fsync only);
//   - a directory entry (create, mkdir, symlink, link, unlink, rmdir,
//     rename, RENAME_EXCHANGE) is durable only once that directory is
//     fsynced. A new file or directory whose parent was not synced is
//     gone after a cut, however well its own data was; a file whose entry
//     is durable but whose data never was comes back empty (or with its
//     last synced content); an entry unlinked or renamed away without a
//     sync of its directory comes back;
//   - a directory named by synced entries in two parents (it moved, and
//     the parent it left was synced before the move) comes back at the
//     entry of the later sync: a rename or RENAME_EXCHANGE across
//     directories is durable once its destination is synced.
//
// This is stricter than any journaling file system, which is the point:
// the project promises durability whatever the file system's goodwill.
//
// The kernel's page cache of a file is kept across opens and attribute
// refreshes: every change comes through the kernel, so the cache is never
// stale, and a drop of it races a write in flight (the page read back can
// hold the old bytes), which bbolt, writing beside other processes that
// open its file, would read as a damaged tree.
//
// # Use
//
//	fs := powerloss.MountTest(t, powerloss.Options{}) // skips without root or /dev/fuse, unless CI is set
//	dataDir := filepath.Join(fs.Dir(), "data")
//	// ... start the processes under test on dataDir ...
//	frozen := fs.FreezeAfter(n) // optional: after n more mutating requests, everything waits
//	<-frozen                    // (or any moment the test chooses)
//	// kill (SIGKILL) every process using the mount, then:
//	err := fs.Cut()             // keep what was synced, unmount, mount the survivors again
//	// ... only now wait for the killed processes, restart them, check ...
//
// The order matters: a process waiting on a frozen request cannot die
// (the kernel waits for the answer), so kill first, then Cut, which fails
// every pending and later request of the old mount with EIO and changes
// nothing more, then wait for the processes. Cut unmounts lazily and waits
// until the kernel lets the old mount go, that is until no process holds a
// file on it any more (a minute at most, then an error). The new mount
// starts with empty kernel caches, so a process that maps a file after the
// cut sees only its durable bytes.
//
// The process that mounts the file system serves it. It must never map a
// file of the mount (mmap, as bbolt does) and fault on it: the fault waits
// for the server, the Go runtime waits for the faulting thread before it
// can stop the world, and both hang. Run what maps files (the daemon, a
// bbolt check) in a child process. For the same reason a test binary that
// dies (a panic, go test's timeout) with a request of its own pending on
// the mount cannot exit; writing 1 to the connection's abort file under
// /sys/fs/fuse/connections (mount -t fusectl none /sys/fs/fuse/connections)
// frees it. A test that fails through t.Fatal is fine: the cleanup of
// MountTest answers every pending request.
//
// Mount, Cut and Unmount need root (the mount is made directly, without
// fusermount) and /dev/fuse. Available says what is missing; MountTest
// skips without them, and fails when the environment sets CI.
//
// FreezeAfter counts mutating requests as the kernel sends them: a write
// of more than the kernel's request size (128 KiB by default) is several
// requests, and a rename or unlink the kernel refuses itself (a name it
// knows to be missing) is none. Ops gives the running count, so a test
// that chooses a freeze point at random draws it from the count a run
// without a freeze reached. Reads are not counted; once frozen, they wait
// too.
//
// The state lives in memory: twice the size of the files (the live data
// and the synced image); nodes nothing can bring back (unlinked, not
// synced anywhere, not open) are dropped. Extended attributes are not
// supported, and flock is kept by the kernel itself.
package powerloss
