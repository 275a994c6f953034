package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/batchhook/batchhook/cpf"
)

// The CPFs of these tests are valid and synthetic.
const (
	cpfA = "52998224725"
	cpfB = "11144477735"
	cpfC = "39053344705"
)

func TestErasureKeyIsMadeOnceAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	k1, err := s.ErasureKey()
	if err != nil || len(k1) != 32 {
		t.Fatalf("ErasureKey = %x, %v; want 32 bytes", k1, err)
	}
	if bytes.Equal(k1, make([]byte, 32)) {
		t.Fatal("key is all zero")
	}
	k2, _ := s.ErasureKey()
	if !bytes.Equal(k1, k2) {
		t.Fatal("second call made another key")
	}
	s.Close()
	s = openTest(t, dir)
	k3, err := s.ErasureKey()
	if err != nil || !bytes.Equal(k1, k3) {
		t.Fatalf("after reopen: key %x, %v; want the same key", k3, err)
	}
	other := openTest(t, t.TempDir())
	if k4, _ := other.ErasureKey(); bytes.Equal(k1, k4) {
		t.Fatal("two databases share a key")
	}
}

func TestErasureRecordKeepsOnlyTheKeyedHash(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	key, _ := s.ErasureKey()
	hash := cpf.KeyedHash(key, cpfA)
	e, created, err := s.BeginErasure(hash, t0)
	if err != nil || !created || e.State != ErasurePending || e.Hash != hash || e.Previous != "" {
		t.Fatalf("BeginErasure = %+v, %v, %v", e, created, err)
	}
	// A pending one is resumed, not doubled.
	again, created, err := s.BeginErasure(hash, t0.Add(time.Second))
	if err != nil || created || again.ID != e.ID {
		t.Fatalf("second BeginErasure while pending = %+v, %v, %v; want the pending one", again, created, err)
	}
	pending, _ := s.Erasures(true)
	if len(pending) != 1 || pending[0].ID != e.ID {
		t.Fatalf("pending = %+v", pending)
	}
	done, err := s.FinishErasure(e.ID, nil, t0.Add(time.Minute))
	if err != nil || done.State != ErasureDone || done.Touched() {
		t.Fatalf("FinishErasure = %+v, %v", done, err)
	}
	if _, err := s.FinishErasure(e.ID, nil, t0); !errors.Is(err, ErrState) {
		t.Fatalf("finishing twice = %v, want ErrState", err)
	}
	second, created, err := s.BeginErasure(hash, t0.Add(time.Hour))
	if err != nil || !created || second.Previous != e.ID || second.ID == e.ID {
		t.Fatalf("erasure after a done one = %+v, %v, %v; want a new one naming %s", second, created, err, e.ID)
	}
	match, err := s.ErasureMatcher()
	if err != nil || match == nil || !match(cpfA) || match(cpfB) {
		t.Fatalf("matcher: err %v, A %v, B %v", err, match != nil && match(cpfA), match != nil && match(cpfB))
	}
	s.Close()
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(cpfA)) {
		t.Fatal("the database file holds the erased CPF")
	}
	if !bytes.Contains(raw, []byte(hash)) {
		t.Fatal("the database file does not hold the keyed hash: the test reads the wrong file")
	}
}

func TestNoErasureNoMatcher(t *testing.T) {
	s := openTest(t, t.TempDir())
	if m, err := s.ErasureMatcher(); m != nil || err != nil {
		t.Fatalf("matcher on a fresh store = %v, %v; want nil, nil", m != nil, err)
	}
}

func TestEraseChunksScrubsUnsentChunks(t *testing.T) {
	s := openTest(t, t.TempDir())
	key, _ := s.ErasureKey()
	// Chunk 0 waits with A and B; chunk 1 holds only A; chunk 2 fails with A, C.
	addSub(t, s, "s1", []string{cpfA, cpfB}, []string{cpfA}, []string{cpfA, cpfC})
	// Chunk 2 went out and the provider refused it: failed, CPFs kept.
	err := s.db.Update(func(tx *bolt.Tx) error {
		c, err := getChunk(tx, chunkKey(1, 2))
		if err != nil {
			return err
		}
		if err := setChunkState(tx, c, ChunkFailed); err != nil {
			return err
		}
		return putChunk(tx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := s.BeginErasure(cpf.KeyedHash(key, cpfA), t0)
	match := func(d string) bool { return cpf.KeyedHash(key, d) == e.Hash }
	got, err := s.EraseChunks(e.ID, match, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].CPFs != 1 || got[0].Ended || !got[1].Ended || got[2].CPFs != 1 {
		t.Fatalf("erased chunks = %+v", got)
	}
	sub, chunks, _ := s.GetSubmission("s1")
	if sub.Valid != 0 || sub.Erased != 3 {
		t.Fatalf("submission counts valid %d erased %d; want 3-3, 3", sub.Valid, sub.Erased)
	}
	if chunks[0].CPFCount != 1 || chunks[0].State != ChunkWaiting || chunks[1].State != ChunkFailed || chunks[1].CPFCount != 0 ||
		!strings.Contains(chunks[1].LastError, "erased") {
		t.Fatalf("chunks = %+v", chunks)
	}
	head := mustNext(t, s)
	if head.Index != 0 || !slices.Equal(head.CPFs, []string{cpfB}) {
		t.Fatalf("head chunk = %+v; want chunk 0 sending B only", head)
	}
	if _, err := s.ChunkResend("s1", 1, t0); !errors.Is(err, ErrState) {
		t.Fatalf("resend of the emptied chunk = %v, want ErrState", err)
	}
	again, err := s.EraseChunks(e.ID, match, t0.Add(2*time.Minute))
	if err != nil || len(again) != 0 {
		t.Fatalf("second pass = %+v, %v; want nothing", again, err)
	}
	rec, _ := s.Erasures(false)
	if len(rec[0].Chunks) != 3 {
		t.Fatalf("record chunks = %+v", rec[0].Chunks)
	}
}

func TestEraseBodiesLeavesTombstones(t *testing.T) {
	s := openTest(t, t.TempDir())
	key, _ := s.ErasureKey()
	bodies := map[string]string{
		"q-formatted": `{"note":"529.982.247-25"}`,
		"q-other":     `{"note":"111.444.777-35"}`,
	}
	for id, body := range bodies {
		if err := s.Quarantine(Quarantined{ID: id, Reason: "r", Raw: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Audit(AuditEvent{ID: "a-digits", Event: "x", Raw: []byte(`{"cpf":"52998224725"}`)}); err != nil {
		t.Fatal(err)
	}
	e, _, _ := s.BeginErasure(cpf.KeyedHash(key, cpfA), t0)
	got, err := s.EraseBodies(e.ID, func(d string) bool { return cpf.KeyedHash(key, d) == e.Hash })
	if err != nil {
		t.Fatal(err)
	}
	want := []ErasedBody{{Kind: "quarantine", ID: "q-formatted"}, {Kind: "audit", ID: "a-digits"}}
	if !slices.Equal(got, want) {
		t.Fatalf("erased bodies = %+v, want %+v", got, want)
	}
	q, err := s.GetQuarantined("q-formatted")
	if err != nil || q.Raw != nil || q.ErasedBy != e.ID || q.Reason != "r" {
		t.Fatalf("tombstone = %+v, %v", q, err)
	}
	// Another person's entry keeps its body, served masked like every
	// kept body (an entry stored as it came, as earlier versions did).
	if q, _ := s.GetQuarantined("q-other"); string(q.Raw) != `{"note":"***.***.***-**"}` || q.ErasedBy != "" {
		t.Fatalf("another person's body changed: %q", q.Raw)
	}
	if a, _ := s.GetAudit("a-digits"); a.Raw != nil || a.ErasedBy != e.ID {
		t.Fatalf("audit tombstone = %+v", a)
	}
}

func TestEraseChunksLeavesAChunkBeingSentAndSaysSo(t *testing.T) {
	s := openTest(t, t.TempDir())
	key, _ := s.ErasureKey()
	addSub(t, s, "s1", []string{cpfA, cpfB})
	if err := s.ChunkSending(1, 0, t0); err != nil {
		t.Fatal(err)
	}
	e, _, _ := s.BeginErasure(cpf.KeyedHash(key, cpfA), t0)
	got, err := s.EraseChunks(e.ID, func(d string) bool { return cpf.KeyedHash(key, d) == e.Hash }, t0)
	if err != nil || len(got) != 1 || !got[0].InFlight || got[0].CPFs != 0 {
		t.Fatalf("EraseChunks = %+v, %v; want the sending chunk noted in flight", got, err)
	}
	// The submitter's outcome still applies to it.
	if _, err := s.ChunkSubmitted(1, 0, "b-new", t0.Add(time.Minute), t0); err != nil {
		t.Fatalf("the chunk being sent was changed under the submitter: %v", err)
	}
}
