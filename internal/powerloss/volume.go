package powerloss

import (
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// cacheFor is how long the kernel may keep an entry or attributes. Every
// change goes through the kernel's own mount, which updates its caches,
// so any time is right; a short one bounds what a mistake here could hide.
const cacheFor = time.Second

// volume is one mount: the tree it serves, answering the kernel's FUSE
// requests (the raw protocol: it gives FSYNCDIR and renameat2's flags as
// they come). Every request runs under one lock, in the order the
// kernel's requests take it.
type volume struct {
	fuse.RawFileSystem // ENOSYS for what is not served (xattrs, locks: the kernel keeps flock locks itself)

	mu   sync.Mutex
	cond *sync.Cond
	tree *tree
	off  bool  // the power went: every request fails with EIO and changes nothing
	ops  int64 // mutating requests served
	// reads counts the READ requests served: what the kernel did not
	// find in its page cache (a test looks at it).
	reads int64

	freezing bool
	freezeAt int64         // with freezing: requests wait once ops reaches it
	frozen   chan struct{} // closed when they start to wait
	isFrozen bool
	waiting  int // requests waiting on the freeze

	dirs   map[uint64][]fuse.DirEntry // open directories' listings, by handle
	nextFh uint64

	server *fuse.Server
	served chan struct{} // closed when the server's loop has ended
}

func newVolume(t *tree) *volume {
	v := &volume{RawFileSystem: fuse.NewDefaultRawFileSystem(), tree: t, frozen: make(chan struct{}),
		dirs: map[uint64][]fuse.DirEntry{}, nextFh: 1, served: make(chan struct{})}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *volume) String() string { return "powerloss" }

// enter is called, with v.mu held, at the start of every request: it
// waits while the volume is frozen, fails once the power is off, and
// counts a mutating request (which may start the freeze for the next).
func (v *volume) enter(mutating bool) fuse.Status {
	for !v.off && v.freezing && v.ops >= v.freezeAt {
		v.markFrozen()
		v.waiting++
		v.cond.Wait()
		v.waiting--
	}
	if v.off {
		return fuse.EIO
	}
	if mutating {
		v.ops++
		if v.freezing && v.ops >= v.freezeAt {
			v.markFrozen()
		}
	}
	return fuse.OK
}

func (v *volume) markFrozen() {
	if !v.isFrozen {
		v.isFrozen = true
		close(v.frozen)
	}
}

// freezeAfter makes every request after n more mutating ones wait.
func (v *volume) freezeAfter(n int64) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.freezing, v.freezeAt = true, v.ops+max(n, 0)
	if v.ops >= v.freezeAt {
		v.markFrozen()
	}
	return v.frozen
}

// powerOff ends the volume: waiting requests and every later one fail
// with EIO and change nothing. It returns what survives and the count of
// mutating requests served.
func (v *volume) powerOff() (*tree, int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.off {
		return nil, v.ops
	}
	v.off = true
	v.cond.Broadcast()
	s := v.tree.survivors()
	v.tree = nil
	return s, v.ops
}

// node returns the node id (ENOENT for one the tree no longer has).
func (v *volume) node(id uint64) (*node, fuse.Status) {
	if n := v.tree.nodes[id]; n != nil {
		return n, fuse.OK
	}
	return nil, fuse.ENOENT
}

func status(errno syscall.Errno) fuse.Status { return fuse.Status(errno) }

func fillAttr(n *node, a *fuse.Attr) {
	size := uint64(len(n.data))
	switch {
	case n.target != "":
		size = uint64(len(n.target))
	case n.isDir():
		size = 4096
	}
	*a = fuse.Attr{Ino: n.id, Size: size, Blocks: (size + 511) / 512, Mode: n.mode, Nlink: n.nlink,
		Owner: fuse.Owner{Uid: n.uid, Gid: n.gid}, Blksize: 4096}
	a.SetTimes(&n.atime, &n.mtime, &n.ctime)
}

// entry answers a request that hands the kernel a reference to n.
func entry(n *node, out *fuse.EntryOut) {
	n.lookups++
	out.NodeId, out.Generation = n.id, 0
	out.SetEntryTimeout(cacheFor)
	out.SetAttrTimeout(cacheFor)
	fillAttr(n, &out.Attr)
}

func (v *volume) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	n, errno := v.tree.lookup(h.NodeId, name)
	if errno != 0 {
		return status(errno)
	}
	entry(n, out)
	return fuse.OK
}

func (v *volume) Forget(id, nlookup uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.off {
		v.tree.forget(id, nlookup)
	}
}

func (v *volume) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return st
	}
	fillAttr(n, &out.Attr)
	out.SetTimeout(cacheFor)
	return fuse.OK
}

func (v *volume) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return st
	}
	if size, ok := in.GetSize(); ok {
		switch {
		case n.isDir():
			return fuse.Status(syscall.EISDIR)
		case !n.isReg():
			return fuse.EINVAL
		}
		v.tree.resize(n, int64(size))
	}
	if mode, ok := in.GetMode(); ok {
		n.mode = n.mode&syscall.S_IFMT | mode&0o7777
	}
	if uid, ok := in.GetUID(); ok {
		n.uid = uid
	}
	if gid, ok := in.GetGID(); ok {
		n.gid = gid
	}
	if at, ok := in.GetATime(); ok {
		n.atime = at
	}
	if mt, ok := in.GetMTime(); ok {
		n.mtime = mt
	}
	n.ctime = v.tree.now()
	fillAttr(n, &out.Attr)
	out.SetTimeout(cacheFor)
	return fuse.OK
}

// make answers the requests that create a node.
func (v *volume) make(parent uint64, name string, mode uint32, caller fuse.Caller, target string, out *fuse.EntryOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, errno := v.tree.make(parent, name, mode, caller.Uid, caller.Gid, target)
	if errno != 0 {
		return status(errno)
	}
	entry(n, out)
	return fuse.OK
}

func (v *volume) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	switch in.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFIFO, syscall.S_IFSOCK:
	default:
		return fuse.EPERM // devices: nothing here needs them
	}
	return v.make(in.NodeId, name, in.Mode, in.Caller, "", out)
}

func (v *volume) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return v.make(in.NodeId, name, syscall.S_IFDIR|in.Mode&0o7777, in.Caller, "", out)
}

func (v *volume) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return v.make(h.NodeId, name, syscall.S_IFLNK|0o777, h.Caller, target, out)
}

func (v *volume) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return nil, st
	}
	n, st := v.node(h.NodeId)
	if !st.Ok() {
		return nil, st
	}
	if n.mode&syscall.S_IFMT != syscall.S_IFLNK {
		return nil, fuse.EINVAL
	}
	return []byte(n.target), fuse.OK
}

func (v *volume) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	return status(v.tree.unlink(h.NodeId, name))
}

func (v *volume) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	return status(v.tree.rmdir(h.NodeId, name))
}

func (v *volume) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	return status(v.tree.rename(in.NodeId, oldName, in.Newdir, newName, in.Flags))
}

func (v *volume) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, errno := v.tree.link(in.Oldnodeid, in.NodeId, name)
	if errno != 0 {
		return status(errno)
	}
	entry(n, out)
	return fuse.OK
}

func (v *volume) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, errno := v.tree.lookup(in.NodeId, name)
	switch {
	case errno == syscall.ENOENT:
		n, errno = v.tree.make(in.NodeId, name, syscall.S_IFREG|in.Mode&0o7777, in.Uid, in.Gid, "")
		if errno != 0 {
			return status(errno)
		}
	case errno != 0:
		return status(errno)
	case in.Flags&syscall.O_EXCL != 0:
		return fuse.Status(syscall.EEXIST)
	case n.isDir():
		return fuse.Status(syscall.EISDIR)
	case in.Flags&syscall.O_TRUNC != 0 && n.isReg():
		v.tree.resize(n, 0)
	}
	entry(n, &out.EntryOut)
	out.OpenOut = fuse.OpenOut{}
	return fuse.OK
}

func (v *volume) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	if _, st := v.node(in.NodeId); !st.Ok() {
		return st
	}
	// No handle (reads and writes name the node) and no FOPEN_DIRECT_IO:
	// the kernel's page cache serves mmap and sees every write, which
	// comes through here first. FOPEN_KEEP_CACHE, because without it
	// every open drops the file's cached pages, and a drop is not safe
	// while another process writes: the kernel unlocks a written page
	// before its WRITE is answered, so a page dropped then and read back
	// (a fault, readahead) can be answered before the WRITE is served and
	// stay in the cache with the old bytes. bbolt then reads its own last
	// commit wrong (a bucket that is gone, a panic in a commit). Nothing
	// changes a file behind the kernel's back, so its cache is never
	// stale and need never be dropped.
	*out = fuse.OpenOut{OpenFlags: fuse.FOPEN_KEEP_CACHE}
	return fuse.OK
}

func (v *volume) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return nil, st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return nil, st
	}
	v.reads++
	k := 0
	if off := int64(in.Offset); off < int64(len(n.data)) {
		k = copy(buf[:min(int(in.Size), len(buf))], n.data[off:])
	}
	return fuse.ReadResultData(buf[:k]), fuse.OK
}

func (v *volume) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return 0, st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return 0, st
	}
	if !n.isReg() {
		return 0, fuse.EINVAL
	}
	v.tree.write(n, int64(in.Offset), data)
	return uint32(len(data)), fuse.OK
}

func (v *volume) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.enter(false)
}

func (v *volume) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return st
	}
	const datasync = 1 // FUSE_FSYNC_FDATASYNC
	v.tree.fsync(n, in.FsyncFlags&datasync != 0)
	return fuse.OK
}

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: reserve space, size unchanged.
const fallocKeepSize = 1

func (v *volume) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	n, st := v.node(in.NodeId)
	if !st.Ok() {
		return st
	}
	switch in.Mode {
	case 0:
		if end := int64(in.Offset + in.Length); end > int64(len(n.data)) {
			v.tree.resize(n, end)
		}
	case fallocKeepSize: // memory needs no reservation
	default:
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	return fuse.OK
}

func (v *volume) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	if _, errno := v.tree.dir(in.NodeId); errno != 0 {
		return status(errno)
	}
	out.Fh = v.nextFh
	v.dirs[v.nextFh] = nil
	v.nextFh++
	return fuse.OK
}

// ReadDir lists a directory as it was when the listing began (offset 0),
// name by name in order; "." and ".." are the kernel's.
func (v *volume) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	d, errno := v.tree.dir(in.NodeId)
	if errno != 0 {
		return status(errno)
	}
	list, ok := v.dirs[in.Fh]
	if !ok || in.Offset == 0 {
		list = list[:0]
		for name, id := range d.entries {
			list = append(list, fuse.DirEntry{Name: name, Ino: id, Mode: v.tree.nodes[id].mode})
		}
		slices.SortFunc(list, func(a, b fuse.DirEntry) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		v.dirs[in.Fh] = list
	}
	for i := in.Offset; i < uint64(len(list)); i++ {
		e := list[i]
		e.Off = i + 1
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

func (v *volume) ReleaseDir(in *fuse.ReleaseIn) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.dirs, in.Fh)
}

func (v *volume) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(true); !st.Ok() {
		return st
	}
	d, errno := v.tree.dir(in.NodeId)
	if errno != 0 {
		return status(errno)
	}
	v.tree.fsyncDir(d)
	return fuse.OK
}

// StatFs reports a 64 GiB file system holding what the tree holds.
func (v *volume) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.enter(false); !st.Ok() {
		return st
	}
	const block, blocks, files = 4096, 16 << 20, 1 << 24
	used := uint64((v.tree.bytes() + block - 1) / block)
	free := uint64(0)
	if used < blocks {
		free = blocks - used
	}
	*out = fuse.StatfsOut{Blocks: blocks, Bfree: free, Bavail: free, Files: files,
		Ffree: files - uint64(len(v.tree.nodes)), Bsize: block, Frsize: block, NameLen: 255}
	return fuse.OK
}
