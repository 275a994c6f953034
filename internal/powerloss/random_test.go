package powerloss

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExtentsMatchABitmap: the dirty ranges are exactly the bytes added,
// merged, sorted and apart.
func TestExtentsMatchABitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var x extents
		var bits [256]bool
		for i := 0; i < 1+rng.IntN(12); i++ {
			a := rng.Int64N(250)
			b := a + rng.Int64N(20)
			x.add(a, min(b, 256))
			for j := a; j < min(b, 256); j++ {
				bits[j] = true
			}
		}
		var got [256]bool
		for i, e := range x {
			if e.start >= e.end || i > 0 && x[i-1].end >= e.start {
				t.Fatalf("round %d: ranges not sorted, apart and non-empty: %v", round, x)
			}
			for j := e.start; j < e.end; j++ {
				got[j] = true
			}
		}
		if got != bits {
			t.Fatalf("round %d: ranges %v do not cover exactly the bytes added", round, x)
		}
	}
}

// TestRandomWritesKeepExactlyWhatWasSynced drives writes, truncates,
// fsyncs and fdatasyncs at random on a few files through the kernel,
// keeps its own copy of what each sync made durable, and compares after
// each cut.
func TestRandomWritesKeepExactlyWhatWasSynced(t *testing.T) {
	fs := MountTest(t, Options{})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const files = 3
	live, synced := make([][]byte, files), make([][]byte, files)
	path := func(i int) string { return filepath.Join(fs.Dir(), fmt.Sprintf("f%d", i)) }
	for i := range files {
		durableFile(t, path(i), "")
	}
	for round := 0; round < 3; round++ {
		handles := make([]*os.File, files)
		for i := range handles {
			f, err := os.OpenFile(path(i), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			handles[i] = f
		}
		for op := 0; op < 300; op++ {
			i := rng.IntN(files)
			f := handles[i]
			switch k := rng.IntN(10); {
			case k < 6: // a write, past the end at times (a hole)
				off := rng.IntN(len(live[i]) + 5000)
				data := make([]byte, 1+rng.IntN(9000))
				for j := range data {
					data[j] = byte('a' + rng.IntN(26))
				}
				if _, err := f.WriteAt(data, int64(off)); err != nil {
					t.Fatal(err)
				}
				if end := off + len(data); end > len(live[i]) {
					live[i] = append(live[i], make([]byte, end-len(live[i]))...)
				}
				copy(live[i][off:], data)
			case k < 8:
				size := rng.IntN(len(live[i]) + 3000)
				if err := f.Truncate(int64(size)); err != nil {
					t.Fatal(err)
				}
				if size > len(live[i]) {
					live[i] = append(live[i], make([]byte, size-len(live[i]))...)
				}
				live[i] = live[i][:size]
			case k < 9:
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				synced[i] = bytes.Clone(live[i])
			default:
				if err := unix.Fdatasync(int(f.Fd())); err != nil {
					t.Fatal(err)
				}
				synced[i] = bytes.Clone(live[i])
			}
		}
		for i, f := range handles {
			got, err := os.ReadFile(path(i))
			if err != nil || !bytes.Equal(got, live[i]) {
				t.Fatalf("round %d, f%d before the cut: %d bytes (%v), want the %d written", round, i, len(got), err, len(live[i]))
			}
			f.Close()
		}
		cut(t, fs)
		for i := range files {
			got, err := os.ReadFile(path(i))
			if err != nil || !bytes.Equal(got, synced[i]) {
				t.Fatalf("round %d, f%d after the cut: %d bytes (%v), want the %d synced (seed %d)", round, i, len(got), err, len(synced[i]), seed)
			}
			live[i] = bytes.Clone(synced[i])
		}
	}
}
