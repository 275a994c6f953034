package powerloss

import (
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// rootID is the node id of the mount's root, as FUSE numbers it.
const rootID = 1

// attrs are a node's metadata.
type attrs struct {
	mode                uint32 // file type and permission bits
	uid, gid            uint32
	atime, mtime, ctime time.Time
}

// image is what of a node survives a power cut: its attributes and its
// data (a file) or entries (a directory) as of its last sync, or as they
// were made when it was never synced.
type image struct {
	attrs
	data    []byte
	entries map[string]uint64
	// seq orders a directory's syncs across the tree (0: never synced
	// since the tree was made): of two synced entries naming one moved
	// directory, the one of the later sync saw the later state.
	seq uint64
}

// node is a file, directory, symbolic link or FIFO: what the running
// system sees (the live fields) and its synced image.
type node struct {
	id uint64
	attrs
	data    []byte            // regular file
	dirty   extents           // regular file: bytes changed since the last sync
	target  string            // symbolic link: fixed when it is made, durable with its entry
	entries map[string]uint64 // directory
	nlink   uint32
	lookups uint64 // references the kernel holds (FUSE lookup count)

	synced image
	// syncedRefs counts the synced entries (of any directory) naming the
	// node: while one does, a cut may bring it back, so it is kept.
	syncedRefs int
}

func (n *node) isDir() bool { return n.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *node) isReg() bool { return n.mode&syscall.S_IFMT == syscall.S_IFREG }

// tree is the whole state of one mounted volume. It is not safe for
// concurrent use: the volume serialises every operation.
type tree struct {
	nodes map[uint64]*node
	next  uint64 // the next node id
	syncs uint64 // directory syncs so far: the last one's image.seq
	now   func() time.Time
}

// newTree is an empty file system whose root has mode perm.
func newTree(perm, uid, gid uint32) *tree {
	t := &tree{nodes: map[uint64]*node{}, next: rootID + 1, now: time.Now}
	now := t.now()
	a := attrs{mode: syscall.S_IFDIR | perm&0o7777, uid: uid, gid: gid, atime: now, mtime: now, ctime: now}
	root := &node{id: rootID, attrs: a, entries: map[string]uint64{}, nlink: 2,
		synced: image{attrs: a, entries: map[string]uint64{}}}
	t.nodes[rootID] = root
	return t
}

// dir returns the directory id.
func (t *tree) dir(id uint64) (*node, syscall.Errno) {
	n := t.nodes[id]
	switch {
	case n == nil:
		return nil, syscall.ENOENT
	case !n.isDir():
		return nil, syscall.ENOTDIR
	}
	return n, 0
}

// lookup returns the node named name in directory parent.
func (t *tree) lookup(parent uint64, name string) (*node, syscall.Errno) {
	p, errno := t.dir(parent)
	if errno != 0 {
		return nil, errno
	}
	id, ok := p.entries[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	return t.nodes[id], 0
}

// touch marks a directory's entries changed.
func (t *tree) touch(n *node) {
	now := t.now()
	n.mtime, n.ctime = now, now
}

// make creates name in parent: a node of mode (type and permissions),
// with target when it is a symbolic link.
func (t *tree) make(parent uint64, name string, mode, uid, gid uint32, target string) (*node, syscall.Errno) {
	p, errno := t.dir(parent)
	if errno != 0 {
		return nil, errno
	}
	if _, ok := p.entries[name]; ok {
		return nil, syscall.EEXIST
	}
	now := t.now()
	a := attrs{mode: mode, uid: uid, gid: gid, atime: now, mtime: now, ctime: now}
	n := &node{id: t.next, attrs: a, target: target, synced: image{attrs: a}}
	t.next++
	if n.isDir() {
		n.entries, n.synced.entries = map[string]uint64{}, map[string]uint64{}
		n.nlink = 2
	}
	t.nodes[n.id] = n
	t.attach(p, name, n)
	t.touch(p)
	return n, 0
}

// attach enters c in p under name, counting the link.
func (t *tree) attach(p *node, name string, c *node) {
	p.entries[name] = c.id
	if c.isDir() {
		p.nlink++ // the child's ".."
	} else {
		c.nlink++
	}
}

// detach removes name from p and returns the node it named, its link
// uncounted (a directory's own count is the caller's: it is moving, or
// gone).
func (t *tree) detach(p *node, name string) *node {
	c := t.nodes[p.entries[name]]
	delete(p.entries, name)
	if c.isDir() {
		p.nlink--
	} else {
		c.nlink--
	}
	c.ctime = t.now()
	return c
}

// release forgets n once nothing can reach it any more: no live entry,
// no reference held by the kernel, no synced entry a cut could bring back.
// The nodes its own synced entries kept may then go too.
func (t *tree) release(n *node) {
	if n.id == rootID || n.nlink > 0 || n.lookups > 0 || n.syncedRefs > 0 {
		return
	}
	delete(t.nodes, n.id)
	for _, id := range n.synced.entries {
		if c := t.nodes[id]; c != nil {
			c.syncedRefs--
			t.release(c)
		}
	}
}

// forget drops k of the kernel's references to id.
func (t *tree) forget(id, k uint64) {
	n := t.nodes[id]
	if n == nil {
		return
	}
	n.lookups -= min(k, n.lookups)
	t.release(n)
}

func (t *tree) unlink(parent uint64, name string) syscall.Errno {
	c, errno := t.lookup(parent, name)
	if errno != 0 {
		return errno
	}
	if c.isDir() {
		return syscall.EISDIR
	}
	p := t.nodes[parent]
	t.detach(p, name)
	t.touch(p)
	t.release(c)
	return 0
}

func (t *tree) rmdir(parent uint64, name string) syscall.Errno {
	c, errno := t.lookup(parent, name)
	if errno != 0 {
		return errno
	}
	if !c.isDir() {
		return syscall.ENOTDIR
	}
	if len(c.entries) > 0 {
		return syscall.ENOTEMPTY
	}
	p := t.nodes[parent]
	t.detach(p, name)
	c.nlink = 0
	t.touch(p)
	t.release(c)
	return 0
}

// link enters node id in parent under name (a hard link).
func (t *tree) link(id, parent uint64, name string) (*node, syscall.Errno) {
	n := t.nodes[id]
	if n == nil {
		return nil, syscall.ENOENT
	}
	if n.isDir() {
		return nil, syscall.EPERM
	}
	p, errno := t.dir(parent)
	if errno != 0 {
		return nil, errno
	}
	if _, ok := p.entries[name]; ok {
		return nil, syscall.EEXIST
	}
	t.attach(p, name, n)
	t.touch(p)
	return n, 0
}

// rename is renameat2: flags 0, RENAME_NOREPLACE or RENAME_EXCHANGE. The
// kernel has already refused moving a directory below itself.
func (t *tree) rename(oldParent uint64, oldName string, newParent uint64, newName string, flags uint32) syscall.Errno {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 || flags == unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE {
		return syscall.EINVAL
	}
	src, errno := t.lookup(oldParent, oldName)
	if errno != 0 {
		return errno
	}
	np, errno := t.dir(newParent)
	if errno != 0 {
		return errno
	}
	op := t.nodes[oldParent]
	dstID, exists := np.entries[newName]
	dst := t.nodes[dstID]
	if flags&unix.RENAME_EXCHANGE != 0 {
		if !exists {
			return syscall.ENOENT
		}
		op.entries[oldName], np.entries[newName] = dst.id, src.id
		if op != np {
			if src.isDir() {
				op.nlink--
				np.nlink++
			}
			if dst.isDir() {
				np.nlink--
				op.nlink++
			}
		}
		now := t.now()
		src.ctime, dst.ctime = now, now
		t.touch(op)
		t.touch(np)
		return 0
	}
	if exists {
		switch {
		case flags&unix.RENAME_NOREPLACE != 0:
			return syscall.EEXIST
		case dst == src:
			return 0 // two links to one file: nothing to do
		case src.isDir() && !dst.isDir():
			return syscall.ENOTDIR
		case !src.isDir() && dst.isDir():
			return syscall.EISDIR
		case dst.isDir() && len(dst.entries) > 0:
			return syscall.ENOTEMPTY
		}
		t.detach(np, newName)
		if dst.isDir() {
			dst.nlink = 0
		}
	}
	t.detach(op, oldName)
	t.attach(np, newName, src)
	t.touch(op)
	t.touch(np)
	if exists {
		t.release(dst)
	}
	return 0
}

// write writes data at off in the regular file n.
func (t *tree) write(n *node, off int64, data []byte) {
	end := off + int64(len(data))
	old := int64(len(n.data))
	if end > old {
		n.data = grow(n.data, end)
	}
	copy(n.data[off:], data)
	n.dirty.add(min(off, old), end)
	now := t.now()
	n.mtime, n.ctime = now, now
}

// resize truncates or extends the regular file n to size (new bytes are
// zeros).
func (t *tree) resize(n *node, size int64) {
	old := int64(len(n.data))
	if size > old {
		n.data = grow(n.data, size)
		n.dirty.add(old, size)
	} else {
		n.data = n.data[:size]
	}
	now := t.now()
	n.mtime, n.ctime = now, now
}

// grow returns b extended to size with zeros, reusing its capacity (and
// doubling it when it must allocate, so that appending stays linear).
func grow(b []byte, size int64) []byte {
	old := len(b)
	if size > int64(cap(b)) {
		nb := make([]byte, size, max(size, 2*int64(cap(b))))
		copy(nb, b)
		return nb
	}
	b = b[:size]
	clear(b[old:])
	return b
}

// fsync makes n's data (and size) durable, and its attributes unless
// datasync (fdatasync).
func (t *tree) fsync(n *node, datasync bool) {
	if n.isReg() {
		size := int64(len(n.data))
		if int64(len(n.synced.data)) > size {
			n.synced.data = n.synced.data[:size]
		} else {
			// The grown part is in a dirty extent: every byte past the
			// old size was written or zeroed since.
			n.synced.data = grow(n.synced.data, size)
		}
		for _, e := range n.dirty {
			if e.start < size {
				copy(n.synced.data[e.start:min(e.end, size)], n.data[e.start:min(e.end, size)])
			}
		}
		n.dirty = n.dirty[:0]
	}
	if !datasync {
		n.synced.attrs = n.attrs
	}
}

// fsyncDir makes the directory n's entries (and attributes) durable.
func (t *tree) fsyncDir(n *node) {
	old := n.synced.entries
	n.synced.entries = make(map[string]uint64, len(n.entries))
	for name, id := range n.entries {
		n.synced.entries[name] = id
		t.nodes[id].syncedRefs++
	}
	n.synced.attrs = n.attrs
	t.syncs++
	n.synced.seq = t.syncs
	for _, id := range old {
		if c := t.nodes[id]; c != nil {
			c.syncedRefs--
			t.release(c)
		}
	}
}

// survivors is the file system a power cut leaves: from the root down,
// the synced entries of each directory, each naming its node as last
// synced. A file whose entry survives but whose data was never synced
// comes back empty. A directory named by two synced entries (moved, and
// both parents synced, the one it left before the move) comes back at the
// entry of the later sync, which saw the later state: a cross-directory
// rename or RENAME_EXCHANGE is durable once its destination is synced.
// Everything that survives is durable in the new tree.
func (t *tree) survivors() *tree {
	s := &tree{nodes: map[uint64]*node{}, next: t.next, syncs: t.syncs, now: t.now}
	home := t.homes()
	made := map[uint64]*node{}
	revive := func(old *node) *node {
		n := &node{id: old.id, attrs: old.synced.attrs, target: old.target,
			data: slices.Clone(old.synced.data)}
		if n.isDir() {
			n.entries = map[string]uint64{}
			n.nlink = 2
		}
		s.nodes[n.id] = n
		made[n.id] = n
		return n
	}
	var fill func(dst, src *node)
	fill = func(dst, src *node) {
		for _, name := range syncedNames(src) {
			id := src.synced.entries[name]
			old := t.nodes[id]
			if old.isDir() && home[id] != (place{src.id, name}) {
				continue // it comes back at a later sync's entry
			}
			if n, ok := made[id]; ok {
				s.attach(dst, name, n) // a file's second link
				continue
			}
			n := revive(old)
			s.attach(dst, name, n)
			if n.isDir() {
				fill(n, old)
			}
		}
	}
	root := revive(t.nodes[rootID])
	fill(root, t.nodes[rootID])
	for _, n := range s.nodes {
		n.synced = image{attrs: n.attrs, data: slices.Clone(n.data)}
		if n.isDir() {
			n.synced.entries = make(map[string]uint64, len(n.entries))
			for name, id := range n.entries {
				n.synced.entries[name] = id
				s.nodes[id].syncedRefs++
			}
		}
	}
	return s
}

// place is a directory entry: the directory's node id and the name.
type place struct {
	parent uint64
	name   string
}

// homes chooses, for each directory reachable from the root through
// synced entries, the synced entry it comes back at: the one in the
// directory synced last, the first in name order from the root on a tie.
// A directory whose chosen entry lies inside itself (moves that made a
// cycle of stale entries) is not reached again and is lost, as its
// contents would be on a disk that saw neither parent's last state.
func (t *tree) homes() map[uint64]place {
	home := map[uint64]place{}
	seq := map[uint64]uint64{}
	seen := map[uint64]bool{rootID: true}
	var walk func(d *node)
	walk = func(d *node) {
		for _, name := range syncedNames(d) {
			c := t.nodes[d.synced.entries[name]]
			if !c.isDir() {
				continue
			}
			if _, ok := home[c.id]; !ok || d.synced.seq > seq[c.id] {
				home[c.id], seq[c.id] = place{d.id, name}, d.synced.seq
			}
			if !seen[c.id] {
				seen[c.id] = true
				walk(c)
			}
		}
	}
	walk(t.nodes[rootID])
	return home
}

// syncedNames is the names of the directory d's synced entries, sorted.
func syncedNames(d *node) []string {
	names := make([]string, 0, len(d.synced.entries))
	for name := range d.synced.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// bytes is the live data the tree holds, for statfs.
func (t *tree) bytes() int64 {
	var total int64
	for _, n := range t.nodes {
		total += int64(len(n.data))
	}
	return total
}
