package powerloss

// The kernel's page cache against the file system: bbolt in a child maps
// its file and writes it with pwrite while other processes open, read and
// stat the same file (as the daemon's CLI and backup do) and the database
// is copied and renamed over itself (as restore and compact do). Nothing
// is cut: whatever bbolt finds wrong here is the layer's doing.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var coherenceFor = flag.Duration("powerloss.coherence", 8*time.Second, "how long TestPageCacheStaysCoherent's workload runs")

// stressHelper is the child that writes: random bbolt transactions for
// the given time, four goroutines reading every value back and checking
// the database meanwhile, and every so often a copy of the database
// renamed over it and opened again. It prints "ok" and the commits made,
// or fails.
func stressHelper(path string, d time.Duration) int {
	deadline := time.Now().Add(d)
	commits, renames := 0, 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for time.Now().Before(deadline) {
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			return 1
		}
		n, err := stressRound(db, rng, min(time.Until(deadline), 2*time.Second))
		commits += n
		if err == nil {
			err = compact(db, path)
			renames++
		}
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "after %d commits and %d renames: %v\n", commits, renames, err)
			return 1
		}
	}
	fmt.Printf("ok %d commits %d renames\n", commits, renames)
	return 0
}

// compact copies the database beside it and renames the copy over it.
func compact(db *bolt.DB, path string) error {
	tmp := path + ".tmp"
	if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(tmp, 0o600) }); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}

// stressValue is key's value: the key, then n copies of fill.
func stressValue(key uint64, fill byte, n int) []byte {
	v := make([]byte, 8+n)
	binary.BigEndian.PutUint64(v, key)
	for i := 8; i < len(v); i++ {
		v[i] = fill
	}
	return v
}

// checkValue says what is wrong with the value stored under k.
func checkValue(k, v []byte) error {
	if len(k) != 8 || len(v) < 8 || !bytes.Equal(k, v[:8]) {
		return fmt.Errorf("key %x: value starts %x", k, v[:min(len(v), 16)])
	}
	for i := 9; i < len(v); i++ {
		if v[i] != v[8] {
			return fmt.Errorf("key %x: byte %d of %d is %#x, the value is filled with %#x", k, i, len(v), v[i], v[8])
		}
	}
	return nil
}

// stressRound writes random transactions for d while readers check.
func stressRound(db *bolt.DB, rng *rand.Rand, d time.Duration) (int, error) {
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("kv"))
		return err
	}); err != nil {
		return 0, fmt.Errorf("create the bucket: %w", err)
	}
	// A backup beside the writer, as the daemon makes one: tx.WriteTo
	// opens the file and reads it with read(2).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if err := db.View(func(tx *bolt.Tx) error {
				_, err := tx.WriteTo(io.Discard)
				return err
			}); err != nil {
				errs <- fmt.Errorf("backup: %w", err)
				return
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := db.View(func(tx *bolt.Tx) error {
					b := tx.Bucket([]byte("kv"))
					if b == nil {
						return errors.New("bucket kv missing")
					}
					// A walk from a random key: the whole of a large
					// database at each turn would starve the writer.
					c := b.Cursor()
					k, v := c.Seek(binary.BigEndian.AppendUint64(nil, rand.Uint64N(stressKeys)))
					for range 64 {
						if k == nil {
							break
						}
						if err := checkValue(k, v); err != nil {
							return err
						}
						k, v = c.Next()
					}
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
			}
		}()
	}
	commits := 0
	end := time.Now().Add(d)
	var werr error
	for time.Now().Before(end) && len(errs) == 0 {
		werr = db.Update(func(tx *bolt.Tx) error {
			// The check reads the freelist, which only a write
			// transaction may do while others commit.
			if commits%16 == 0 {
				for err := range tx.Check() {
					return fmt.Errorf("check before commit %d: %w", commits, err)
				}
			}
			b := tx.Bucket([]byte("kv"))
			if b == nil {
				return errors.New("bucket kv missing")
			}
			for range 1 + rng.IntN(20) {
				key := rng.Uint64N(stressKeys)
				k := binary.BigEndian.AppendUint64(nil, key)
				switch {
				case rng.IntN(4) == 0:
					if err := b.Delete(k); err != nil {
						return err
					}
				case rng.IntN(100) == 0:
					if err := b.Put(k, stressValue(key, byte(rng.Uint32()), 4096+rng.IntN(16000))); err != nil {
						return err
					}
				default:
					if err := b.Put(k, stressValue(key, byte(rng.Uint32()), rng.IntN(1000))); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if werr != nil {
			werr = fmt.Errorf("writer: %w", werr)
			break
		}
		commits++
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		return commits, err
	}
	return commits, werr
}

// peekHelper is a child that opens, reads and stats the file over and
// over for the given time, as a CLI or a backup does beside the daemon.
func peekHelper(path string, d time.Duration) int {
	deadline := time.Now().Add(d)
	buf := make([]byte, 64<<10)
	opens := 0
	// Paced, not back to back: each open drops the kernel's cache of the
	// file, and a page the cache got wrong lasts until the next drop, long
	// enough for bbolt to trip on it only if drops are a few per second.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		<-tick.C
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // between a copy's rename and the next open
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			return 1
		}
		opens++
		if _, err := f.Stat(); err != nil {
			fmt.Fprintln(os.Stderr, "stat:", err)
			return 1
		}
		// The whole file, as a backup copies it.
		if _, err := io.CopyBuffer(io.Discard, f, buf); err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			return 1
		}
		f.Close()
	}
	fmt.Printf("ok %d opens\n", opens)
	return 0
}

// TestPageCacheStaysCoherent runs the stress child on the mount with two
// children peeking at the file beside it.
func TestPageCacheStaysCoherent(t *testing.T) {
	opts := Options{}
	if dbg := os.Getenv("POWERLOSS_DEBUG_LOG"); dbg != "" {
		f, err := os.Create(dbg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		opts.Debug, opts.Logger = true, log.New(f, "", log.Lmicroseconds)
	}
	fs := MountTest(t, opts)
	path := filepath.Join(fs.Dir(), "stress.db")
	runCoherence(t, path, *coherenceFor)
}

// TestPageCacheStaysCoherentOffTheMount is the same workload on an
// ordinary file system (the test's temporary directory), to tell the layer's faults from bbolt's or the workload's.
func TestPageCacheStaysCoherentOffTheMount(t *testing.T) {
	runCoherence(t, filepath.Join(t.TempDir(), "stress.db"), *coherenceFor)
}

func runCoherence(t *testing.T, path string, d time.Duration) {
	start := func(what string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", helperEnv+"="+what, "POWERLOSS_DB="+path,
			"POWERLOSS_KEY="+strconv.FormatInt(int64(d), 10))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &out
	}
	stress, stressOut := start("stress")
	var peeks []*bytes.Buffer
	var peekCmds []*exec.Cmd
	for range 2 {
		c, out := start("peek")
		peekCmds, peeks = append(peekCmds, c), append(peeks, out)
	}
	if err := stress.Wait(); err != nil {
		t.Fatalf("the bbolt child failed: %v\n%s", err, stressOut)
	}
	for i, c := range peekCmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("peek child %d failed: %v\n%s", i, err, peeks[i])
		}
	}
	t.Logf("bbolt child: %s", bytes.TrimSpace(stressOut.Bytes()))
	for _, p := range peeks {
		t.Logf("peek child: %s", bytes.TrimSpace(p.Bytes()))
	}
}

// stressKeys bounds the keys the stress child writes: a database of a
// few hundred KiB, which the kernel reads back quickly whenever it drops
// its cache, so that commits come fast.
const stressKeys = 1000

// TestTheKernelKeepsItsCache checks what makes the workload above safe:
// neither an open of the file nor fresh attributes after a write (a new
// mtime) make the kernel drop the pages it holds and read them again.
func TestTheKernelKeepsItsCache(t *testing.T) {
	fs := MountTest(t, Options{})
	path := filepath.Join(fs.Dir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{'a'}, 256<<10)); err != nil {
		t.Fatal(err)
	}
	reads := func() int64 {
		fs.vol.mu.Lock()
		defer fs.vol.mu.Unlock()
		return fs.vol.reads
	}
	// readAll reads the whole file through a new descriptor, or through
	// f (whose open is long done), and says what made the kernel ask.
	readAll := func(what string, reopen bool) {
		t.Helper()
		before := reads()
		r := io.Reader(io.NewSectionReader(f, 0, 256<<10))
		if reopen {
			g, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			r = g
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if n := reads() - before; n != 0 && what != "" {
			t.Errorf("%s: the kernel read the cached file again (%d READ requests)", what, n)
		}
	}
	readAll("", false) // fills the cache (the written pages may already be there)
	readAll("an open", true)
	if _, err := f.WriteAt([]byte{'b'}, 0); err != nil { // a new mtime, attributes to fetch again
		t.Fatal(err)
	}
	if _, err := f.Stat(); err != nil {
		t.Fatal(err)
	}
	readAll("fresh attributes after a write", false)
}
