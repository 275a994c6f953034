package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestConcurrentRecordsShareCommitsAndStayExact(t *testing.T) {
	s := openTest(t, t.TempDir())
	const n = 300
	var wg sync.WaitGroup
	created := make(chan string, 2*n)
	for i := 0; i < 2*n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("b%d", i%n) // every id twice
			ok, err := s.Record(note(id, t0))
			if err != nil {
				t.Error(err)
			}
			if ok {
				created <- id
			}
		}(i)
	}
	wg.Wait()
	close(created)
	seen := map[string]bool{}
	for id := range created {
		if seen[id] {
			t.Fatalf("%s created twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d batches created, want %d", len(seen), n)
	}
	counts, _ := s.Counts()
	if counts[StateQueued] != n {
		t.Fatalf("counts = %v", counts)
	}
}

func TestRecordAfterCloseFailsWithoutHanging(t *testing.T) {
	s, err := Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Record(note("late", t0))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Record after Close = %v, want ErrClosed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Record after Close hangs")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// BenchmarkRecord measures durable records per second at the parallelism
// given by -cpu (each op waits for its fsynced commit):
//
//	go test -run XXX -bench BenchmarkRecord -cpu 1,16,64 ./store/
func BenchmarkRecord(b *testing.B) {
	s, err := Open(b.TempDir(), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	seq := 0
	b.SetParallelism(1) // goroutines = GOMAXPROCS (-cpu) × 1
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			seq++
			id := fmt.Sprintf("bench_%d", seq)
			mu.Unlock()
			if _, err := s.Record(note(id, t0)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestWriterKeepsNoBodyAfterItsCommit: the writer reuses its group slice;
// a body it recorded must be collectable once Record returned, or the
// largest burst's bodies (up to maxGroup × MAX_BODY_BYTES) stay alive.
func TestWriterKeepsNoBodyAfterItsCommit(t *testing.T) {
	s := openTest(t, t.TempDir())
	freed := make(chan struct{})
	func() {
		body := new([64 << 10]byte)
		n := note("b_big", t0)
		n.Raw = body[:copy(body[:], `{"raw":true}`)]
		runtime.SetFinalizer(body, func(*[64 << 10]byte) { close(freed) })
		if _, err := s.Record(n); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.After(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-deadline:
			t.Fatal("the recorded body is still reachable 5s after Record returned: the writer keeps it")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
