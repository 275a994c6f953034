package e2e

// Backup, restore and compaction with the real binary: a backup taken
// while the daemon serves a flood of notifications, restored with the
// daemon stopped, must hold every record exactly as the backup file does.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// runOffline runs the binary with only BATCHHOOK_DATA_DIR set (no secret,
// no provider): the offline commands must need nothing else.
func runOffline(t *testing.T, dataDir string, args ...string) (string, string, int) {
	t.Helper()
	return runFrom(t, "", []string{"BATCHHOOK_DATA_DIR=" + dataDir}, args...)
}

func tempFilesIn(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBackupCommandAndOfflineCommandsRefuseWhileTheDaemonRuns(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	data := s.env["BATCHHOOK_DATA_DIR"]
	for i := 0; i < 3; i++ {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(10, int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		s.waitExport(t, id, d, 20*time.Second)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "snap.db")
	out, stderr, code := runCLI(t, d, 30*time.Second, "backup", file)
	if code != 0 || !strings.Contains(out, "backup written to "+file) || !regexpLine(out, `batches\s+3\s`) {
		t.Fatalf("backup: exit %d\n%s%s", code, out, stderr)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v, want mode 0600", st, err)
	}
	first, _ := os.ReadFile(file)
	if _, stderr, code := runCLI(t, d, 30*time.Second, "backup", file); code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("backup over an existing file: exit %d, %s", code, stderr)
	}
	if again, _ := os.ReadFile(file); !bytes.Equal(again, first) {
		t.Fatal("a refused backup changed the existing file")
	}
	leftover := filepath.Join(dir, ".snap.db.tmp-123") // as a killed backup leaves it
	if err := os.WriteFile(leftover, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCLI(t, d, 30*time.Second, "backup", "--force", file); code != 0 || !strings.Contains(out, "removed "+leftover) {
		t.Fatalf("backup --force: exit %d, %s%s", code, out, stderr)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("the interrupted backup's temporary file is still there: %v", err)
	}
	// A daemon that is not there: no file, no temporary file.
	other := filepath.Join(dir, "none.db")
	if _, _, code := runCLI(t, d, 30*time.Second, "backup", "--admin", "http://"+freePort(t), other); code != 1 {
		t.Fatalf("backup from no daemon: exit %d, want 1", code)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) || len(tempFilesIn(t, dir)) != 0 {
		t.Fatalf("failed backup left %v, %v", err, tempFilesIn(t, dir))
	}

	for _, args := range [][]string{{"restore", file}, {"compact"}} {
		_, stderr, code := runOffline(t, data, args...)
		if code != 1 || !strings.Contains(stderr, "daemon running? stop it first") {
			t.Fatalf("%s while the daemon runs: exit %d, %s", args[0], code, stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(data, "*.bak-*")); len(m) != 0 || len(tempFilesIn(t, data)) != 0 {
		t.Fatalf("refused commands left %v %v", m, tempFilesIn(t, data))
	}
	d.stop(t)
	out, stderr, code = runOffline(t, data, "compact")
	if code != 0 || !regexpLine(out, `compacted .*: \d+ bytes before, \d+ after`) {
		t.Fatalf("compact: exit %d\n%s%s", code, out, stderr)
	}
}

// TestBackupUnderFloodThenRestore: notifications (new ones and replays)
// and a CPF submission flow in while `batchhook backup` runs; after the
// daemon is stopped and the backup restored, the database holds exactly
// the backup's records (every bucket's digest equal: batches, checkpoints,
// deliveries, chunks), the previous one is kept, and the restarted daemon
// serves and finishes every batch the backup knew.
func TestBackupUnderFloodThenRestore(t *testing.T) {
	t.Parallel()
	s, _, _ := httpSinkSetup(t, lookupsim.Options{
		ProcessingDelay: 20 * time.Millisecond, SubmitPerMinute: lookupsim.Unlimited, MaxInFlight: lookupsim.Unlimited,
		Faults: lookupsim.Faults{DuplicateDeliveries: 1},
	}, 50, func(context.Context, demo.Message) int { return http.StatusOK })
	s.env["BATCHHOOK_PAGE_LIMIT"] = "25"
	d := startDaemon(t, s.addr, s.env)
	data := s.env["BATCHHOOK_DATA_DIR"]

	cpfs, _, _ := cpfFile(t, 300, 7)
	if _, stderr, code := runCLI(t, d, 30*time.Second, "submit", "--no-wait", cpfs); code != 0 {
		t.Fatalf("submit: %s", stderr)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	var sent atomic.Int64
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id, err := s.sim.Submit(lookupsim.SampleCPFs(5+i%30, int64(g*10_000+i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, id)
				replay := ids[(i*7)%len(ids)]
				mu.Unlock()
				if body, ok := s.sim.Notification(replay); ok {
					postQuiet(s.addr, body)
				}
				sent.Add(1)
			}
		}(g)
	}
	waitUntil(t, 60*time.Second, func() bool { return countInState(t, d, "") >= 100 }, "100 batches recorded")
	file := filepath.Join(t.TempDir(), "flood.db")
	out, stderr, code := runCLI(t, d, 60*time.Second, "backup", file)
	if code != 0 {
		t.Fatalf("backup mid-flood: exit %d\n%s%s", code, out, stderr)
	}
	waitUntil(t, 60*time.Second, func() bool { return countInState(t, d, "") >= 200 }, "100 more batches recorded after the backup")
	close(stop)
	wg.Wait()
	d.stop(t)

	backup, err := store.Check(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"batches", "deliveries", "chunks", "submissions"} {
		if backup.Keys(b) == 0 {
			t.Fatalf("the mid-flood backup has no %s: %v", b, backup.Buckets)
		}
	}
	t.Logf("backup mid-flood: %d batches, %d deliveries, %d chunks; %d batches submitted in all",
		backup.Keys("batches"), backup.Keys("deliveries"), backup.Keys("chunks"), sent.Load())
	before, err := store.Check(filepath.Join(data, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if before.Keys("batches") <= backup.Keys("batches") {
		t.Fatalf("the database (%d batches) did not grow after the backup (%d)", before.Keys("batches"), backup.Keys("batches"))
	}
	out, stderr, code = runOffline(t, data, "restore", file)
	if code != 0 || !strings.Contains(out, "previous database kept as ") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, stderr)
	}
	after, err := store.Check(filepath.Join(data, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after.Buckets, backup.Buckets) {
		t.Fatalf("restored database %v\ndiffers from the backup %v", after.Buckets, backup.Buckets)
	}
	kept, _ := filepath.Glob(filepath.Join(data, store.FileName+".bak-*"))
	if len(kept) != 1 {
		t.Fatalf("kept %v, want one .bak file", kept)
	}
	if k, err := store.Check(kept[0]); err != nil || !slices.Equal(k.Buckets, before.Buckets) {
		t.Fatalf("the kept database is not the previous one: %v", err)
	}

	// The restored daemon serves: it knows every batch of the backup, and
	// finishes them (queued or fetching ones are fetched again).
	d = startDaemon(t, s.addr, s.env)
	waitUntil(t, 90*time.Second, func() bool {
		all := countInState(t, d, "")
		return all >= backup.Keys("batches") && countInState(t, d, "exported")+countInState(t, d, "abandoned") == all
	}, "every batch of the backup exported or abandoned")
}

// countInState counts the batches in state through the admin API.
func countInState(t *testing.T, d *daemonProc, state string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		code, body := get(t, d.admin+"/admin/batches?limit=1000&state="+state+"&cursor="+cursor, "")
		if code != http.StatusOK {
			t.Fatalf("list %s: %d %s", state, code, body)
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if page.NextCursor == "" {
			return n
		}
		cursor = page.NextCursor
	}
}

// TestRestoreReportsExportsOutOfStep: EXPORT_DIR is not in the backup. A
// batch exported before the backup whose export is gone is listed to
// refetch (and a refetch brings it back); one exported after the backup is
// listed as an export without a batch.
func TestRestoreReportsExportsOutOfStep(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	data := s.env["BATCHHOOK_DATA_DIR"]
	before, err := s.sim.Submit(lookupsim.SampleCPFs(10, 1))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, before, d, 20*time.Second)
	waitExportedLine(t, d, before) // the backup must hold it exported, which the store records after the manifest
	file := filepath.Join(t.TempDir(), "snap.db")
	if _, stderr, code := runCLI(t, d, 30*time.Second, "backup", file); code != 0 {
		t.Fatalf("backup: %s", stderr)
	}
	after, err := s.sim.Submit(lookupsim.SampleCPFs(10, 2))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, after, d, 20*time.Second)
	d.stop(t)
	if err := os.RemoveAll(filepath.Join(s.exports, before)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runOffline(t, data, "restore", file)
	if code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", code, out, stderr)
	}
	if !regexpLine(out, `^1 exported batches have no complete export`) || !regexpLine(out, `^  `+before+`$`) ||
		!regexpLine(out, `^1 exports in .* belong to no batch`) || !regexpLine(out, `^  `+after+`$`) {
		t.Fatalf("restore did not report the missing export of %s and the stray one of %s:\n%s", before, after, out)
	}
	d = startDaemon(t, s.addr, s.env)
	if _, stderr, code := runCLI(t, d, 30*time.Second, "batches", "refetch", before); code != 0 {
		t.Fatalf("refetch: %s", stderr)
	}
	s.waitExport(t, before, d, 20*time.Second)
	s.checkExport(t, before)
}
