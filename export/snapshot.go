package export

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Snapshot is one published export opened for a sink: its manifest and an
// open results file that match each other, whatever replaces the export
// while the sink reads it. An export changes its content in four ways (a
// refetch replaces it, an erasure rewrites it, the purger or a removal
// deletes it); each one, while it still holds the batch's lock, closes
// Changed of every snapshot of the batch and waits until each is closed.
// So a sink never mixes two versions, and once an erasure returns no sink
// is still sending the content it removed.
type Snapshot struct {
	// Raw is manifest.json exactly as published; Manifest is Raw parsed.
	Raw      []byte
	Manifest Manifest

	results *os.File
	size    int64
	changed chan struct{}
	closed  chan struct{}
	once    sync.Once
	set     *readers
	id      string
}

// Items returns a reader of results.ndjson from its first byte; each call
// starts again. Closing it does not close the snapshot.
func (s *Snapshot) Items() io.ReadCloser {
	return io.NopCloser(io.NewSectionReader(s.results, 0, s.size))
}

// Changed is closed once the export's content changed (or is about to be
// deleted): the sink stops, and the snapshot's owner closes it.
func (s *Snapshot) Changed() <-chan struct{} { return s.changed }

// Close releases the results file and lets a change waiting for this
// snapshot go on. Closing twice is harmless.
func (s *Snapshot) Close() error {
	var err error
	s.once.Do(func() {
		s.set.drop(s)
		err = s.results.Close()
		close(s.closed)
	})
	return err
}

// readers are the open snapshots, by batch.
type readers struct {
	mu sync.Mutex
	m  map[string]map[*Snapshot]struct{}
}

func (r *readers) add(s *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[*Snapshot]struct{}{}
	}
	if r.m[s.id] == nil {
		r.m[s.id] = map[*Snapshot]struct{}{}
	}
	r.m[s.id][s] = struct{}{}
}

func (r *readers) drop(s *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[s.id], s)
	if len(r.m[s.id]) == 0 {
		delete(r.m, s.id)
	}
}

// changed tells every open snapshot of batchID that the export changed and
// waits until all of them are closed. The caller holds the batch's lock,
// so no new snapshot of the old content can be opened meanwhile.
func (r *readers) changed(batchID string) {
	r.mu.Lock()
	var wait []*Snapshot
	for s := range r.m[batchID] {
		select {
		case <-s.changed:
		default:
			close(s.changed)
		}
		wait = append(wait, s)
	}
	r.mu.Unlock()
	for _, s := range wait {
		<-s.closed
	}
}

// Open returns a snapshot of the published export of batchID for a sink,
// after checking results.ndjson against the manifest: the file it checked
// is the one the snapshot reads. ok is false when no complete export is in
// place (missing, or not matching its manifest); a link in its place is
// ErrUnsafePath. The caller closes the snapshot.
func (d *Dir) Open(batchID string) (*Snapshot, bool, error) {
	if err := checkID(batchID); err != nil {
		return nil, false, err
	}
	defer d.locks.lock(batchID)()
	h, err := d.open()
	if err != nil {
		return nil, false, err
	}
	defer h.close()
	m, raw, rf, ok, err := readOpen(h.root, batchID, batchID)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil || !ok {
		return nil, false, err
	}
	st, err := rf.Stat()
	if err != nil {
		rf.Close()
		return nil, false, fmt.Errorf("stat results of %s: %w", batchID, err)
	}
	s := &Snapshot{Raw: raw, Manifest: m, results: rf, size: st.Size(), changed: make(chan struct{}),
		closed: make(chan struct{}), set: &d.readers, id: batchID}
	d.readers.add(s)
	return s, true, nil
}
