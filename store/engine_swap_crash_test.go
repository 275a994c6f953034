package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crashEnv tells TestSwapCrashHelper, run as a child process, which swap
// to run and at which step to die: "op|step|dir|file".
const crashEnv = "STORE_SWAP_CRASH_AT"

// TestSwapCrashHelper is the child of TestSwapCrashAtEachStep: it runs a
// restore or compaction and exits at once at the step named, with no
// deferred cleanup, as a killed process would.
func TestSwapCrashHelper(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("run by TestSwapCrashAtEachStep")
	}
	f := strings.Split(spec, "|")
	die := func(step string) {
		if step == f[1] {
			os.Exit(7)
		}
	}
	var err error
	if f[0] == "restore" {
		_, err = restore(f[2], f[3], false, t1, die)
	} else {
		_, err = compact(f[2], false, t1, die)
	}
	t.Fatalf("%s finished (%v) without reaching step %s", f[0], err, f[1])
}

// TestSwapCrashAtEachStep kills a restore and a compaction at each step:
// batchhook.db must be there, open, and be the old database before the
// rename and the new one after it; the next run removes the leftovers and
// finishes.
func TestSwapCrashAtEachStep(t *testing.T) {
	for _, op := range []string{"restore", "compact"} {
		for _, step := range []string{"copied", "kept", "renamed"} {
			t.Run(op+"-"+step, func(t *testing.T) {
				var dir, backup string
				if op == "restore" {
					dir, backup = oldAndBackup(t)
				} else {
					dir = t.TempDir()
					halfDeleted(t, dir)
				}
				db := filepath.Join(dir, FileName)
				before, err := os.Stat(db)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestSwapCrashHelper$")
				// atexit_sleep_ms=0: a race-enabled child otherwise sleeps a
				// second at its exit.
				cmd.Env = append(os.Environ(), crashEnv+"="+strings.Join([]string{op, step, dir, backup}, "|"), "GORACE=atexit_sleep_ms=0")
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 7 {
					t.Fatalf("child did not die at %s: %v\n%s", step, err, out)
				}
				sum, err := Check(db)
				if err != nil {
					t.Fatalf("after a crash at %s: %v", step, err)
				}
				after, _ := os.Stat(db)
				isNew := !os.SameFile(before, after)
				if isNew != (step == "renamed") {
					t.Fatalf("crash at %s: batchhook.db is the new file = %v", step, isNew)
				}
				if op == "restore" && has(t, db, "only-old") == isNew {
					t.Fatalf("crash at %s: the database is neither the old nor the backup", step)
				}
				if op == "compact" && sum.Keys("test-00") != 1000 {
					t.Fatalf("crash at %s: %v", step, sum.Buckets)
				}
				left := leftovers(t, dir)
				if (len(left) == 1) != (step != "renamed") {
					t.Fatalf("crash at %s left temporary files %v", step, left)
				}
				var res SwapResult
				if op == "restore" {
					res, err = Restore(dir, backup, false, t1.Add(time.Minute))
				} else {
					res, err = Compact(dir, false, t1.Add(time.Minute))
				}
				if err != nil {
					t.Fatalf("the run after a crash at %s: %v", step, err)
				}
				if len(res.Removed) != len(left) || len(leftovers(t, dir)) != 0 {
					t.Fatalf("the run after a crash removed %v, leftovers were %v", res.Removed, left)
				}
			})
		}
	}
}
