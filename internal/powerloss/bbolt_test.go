package powerloss

// bbolt on the mount. bbolt maps its file, and a page fault on a mapping
// of this file system must never happen in the process that serves it
// (the fault waits for the server while the Go runtime waits for the
// faulting thread to stop the world): bbolt runs in a child, this test
// binary run again as a helper.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// helperEnv names what the test binary does when run as a helper.
const helperEnv = "POWERLOSS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch h := os.Getenv(helperEnv); h {
	case "":
	case "stress", "peek":
		d, err := strconv.ParseInt(os.Getenv("POWERLOSS_KEY"), 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "duration:", err)
			os.Exit(2)
		}
		if h == "stress" {
			os.Exit(stressHelper(os.Getenv("POWERLOSS_DB"), time.Duration(d)))
		}
		os.Exit(peekHelper(os.Getenv("POWERLOSS_DB"), time.Duration(d)))
	default:
		os.Exit(boltHelper(h, os.Getenv("POWERLOSS_DB"), os.Getenv("POWERLOSS_KEY")))
	}
	os.Exit(m.Run())
}

// boltHelper is the child: "put" stores key in bucket b (64 KiB, in one
// transaction) and prints "committed" once the commit returned; "get"
// checks the database and prints "present" or "absent" for key.
func boltHelper(what, path, key string) int {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer db.Close()
	switch what {
	case "put":
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(key), bytes.Repeat([]byte{'v'}, 64<<10))
		})
		if err == nil {
			fmt.Println("committed")
		}
	case "get":
		err = db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return fmt.Errorf("inconsistent: %w", err)
			}
			b := tx.Bucket([]byte("b"))
			if b != nil && b.Get([]byte(key)) != nil {
				fmt.Println("present")
			} else {
				fmt.Println("absent")
			}
			return nil
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 1
	}
	return 0
}

// boltChild starts the helper on the database at path.
func boltChild(t *testing.T, what, path, key string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// atexit_sleep_ms=0: a race-enabled child otherwise sleeps a second at exit.
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", helperEnv+"="+what, "POWERLOSS_DB="+path, "POWERLOSS_KEY="+key)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// boltRun runs the helper to its end and returns its output.
func boltRun(t *testing.T, what, path, key string) string {
	t.Helper()
	cmd, out := boltChild(t, what, path, key)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bbolt %s %s: %v\n%s", what, key, err, out)
	}
	return strings.TrimSpace(out.String())
}

// TestBboltCommitSurvivesAndAnInterruptedOneDoesNot cuts the power at
// every mutating request of a bbolt commit in turn. A commit that
// returned is there after the cut; one cut before its meta page was
// synced is not (its pages were written, not committed); the database
// is consistent every time. A commit may be durable without having
// returned: what follows its last sync (reading the new meta page through
// the mapping) waits on the freeze too.
func TestBboltCommitSurvivesAndAnInterruptedOneDoesNot(t *testing.T) {
	fs := MountTest(t, Options{})
	path := filepath.Join(fs.Dir(), "test.db")
	boltRun(t, "put", path, "committed")
	syncDir(t, fs.Dir()) // bbolt does not sync the directory of the file it makes
	before := fs.Ops()
	boltRun(t, "put", path, "measure")
	perCommit := fs.Ops() - before
	if perCommit < 3 {
		t.Fatalf("a commit made %d mutating requests; expected its writes and two syncs", perCommit)
	}
	var returned, durable, gone int
	// A few points past the measured count: a commit that grows the file
	// makes more requests than the one measured.
	last := perCommit + 3
	for k := int64(0); k <= last; k++ {
		key := fmt.Sprintf("interrupted-%d", k)
		frozen := fs.FreezeAfter(k)
		child, out := boltChild(t, "put", path, key)
		exited := make(chan error, 1)
		go func() { exited <- child.Wait() }()
		select {
		case <-frozen:
			_ = child.Process.Signal(syscall.SIGKILL)
			cut(t, fs)
			<-exited
		case err := <-exited: // this commit made fewer requests than k
			if err != nil {
				t.Fatalf("freeze after %d: %v\n%s", k, err, out)
			}
			cut(t, fs)
		case <-time.After(30 * time.Second):
			t.Fatalf("freeze after %d requests did not take hold", k)
		}
		committed := strings.Contains(out.String(), "committed")
		if got := boltRun(t, "get", path, "committed"); got != "present" {
			t.Fatalf("freeze after %d: the earlier commit is %s after the cut", k, got)
		}
		got := boltRun(t, "get", path, key)
		if committed && got != "present" {
			t.Errorf("freeze after %d of %d requests: the commit returned, and after the cut the key is %s", k, perCommit, got)
		}
		if committed {
			returned++
		}
		if got == "present" {
			durable++
		} else {
			gone++
		}
	}
	t.Logf("%d freeze points: %d commits returned, %d durable after the cut, %d gone", last+1, returned, durable, gone)
	if returned == 0 || gone == 0 {
		t.Fatalf("over %d freeze points %d commits returned and %d were gone: the cuts did not fall both inside and after a commit", last+1, returned, gone)
	}
}
