package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

var (
	faultBinaryOnce sync.Once
	faultBinary     string
	faultBuildErr   error
)

// buildFaultBinary builds the binary with the test-only storage fault knob
// (store/engine_fault_on.go), once.
func buildFaultBinary(t *testing.T) string {
	t.Helper()
	faultBinaryOnce.Do(func() {
		raced := filepath.Join(filepath.Dir(binary), "race", "batchhook-faultinject")
		out, err := exec.Command("go", "build", "-race", "-tags", "faultinject", "-o", raced, "../cmd/batchhook").CombinedOutput()
		if err != nil {
			faultBuildErr = err
			t.Logf("%s", out)
			return
		}
		faultBinary = filepath.Join(filepath.Dir(binary), "batchhook-faultinject")
		faultBuildErr = writeRaceLauncher(faultBinary, raced)
	})
	if faultBuildErr != nil {
		t.Fatalf("build with -tags faultinject: %v", faultBuildErr)
	}
	return faultBinary
}

// TestStorageFailureNeverAcknowledges: while the store cannot commit, every
// delivery is answered 503 (so the provider retries) and nothing is
// recorded; once it can, the retried deliveries are recorded and exported.
func TestStorageFailureNeverAcknowledges(t *testing.T) {
	t.Parallel()
	bin := buildFaultBinary(t)
	s := newSetup(t, lookupsim.Options{RetryBackoff: 100 * time.Millisecond, MaxAttempts: 1000})
	fault := filepath.Join(s.env["BATCHHOOK_DATA_DIR"], "FAIL_WRITES")
	if err := os.MkdirAll(s.env["BATCHHOOK_DATA_DIR"], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fault, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := startBinary(t, bin, s.addr, s.env)

	var ids []string
	for i := 0; i < 4; i++ {
		id, err := s.sim.Submit(lookupsim.SampleCPFs(20, int64(100+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitFor(t, func() bool { return s.sim.Stats().DeliveryFailures >= 8 })
	body := []byte(`{"event":"batch.completed","batch_id":"b_direct","status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":"2026-11-22T10:00:00Z"}`)
	if code, reply := postSigned(t, s.addr, body, 1); code != 503 {
		t.Fatalf("delivery during a storage failure: %d %v, want 503", code, reply)
	}
	if acked := s.sim.Stats().DeliveriesAcked; acked != 0 {
		t.Fatalf("%d deliveries acknowledged while the store could not commit", acked)
	}
	// Logged before each 503, but read through a pipe: wait for the line.
	waitLogLine(t, d, `"event":"webhook_store_failed"`)
	// The knob refuses before anything is written: a write error, not a
	// failed commit. Readiness says so (its own empty probe commit does not
	// hide it), the counter counts it, and the daemon keeps running.
	if code, body := get(t, d.admin+"/readyz", ""); code != 503 || !strings.Contains(body, "last write failed") {
		t.Fatalf("/readyz after a failed write: %d %s, want 503 with the reason", code, body)
	}
	if n := writeErrors(t, d); n < 1 {
		t.Fatalf("batchhook_store_write_errors_total = %v after a failed write", n)
	}
	if entries, _ := os.ReadDir(s.exports); len(entries) > 1 { // only .partial may exist
		t.Fatalf("exports during a storage failure: %v", entries)
	}

	// The store recovers: the provider's retries are recorded and exported.
	os.Remove(fault)
	for _, id := range ids {
		s.waitExport(t, id, d, 30*time.Second)
		s.checkExport(t, id)
	}
	if code, body := get(t, d.admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz once writes commit again: %d %s", code, body)
	}
	d.stop(t)
	// The whole log, once the daemon is gone.
	if strings.Contains(d.out.String(), `"event":"store_failed"`) {
		t.Fatal("a refused write failed the store; only a failed commit may")
	}
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if known, _ := st.Known("b_direct"); known {
		t.Fatal("a delivery answered 503 was recorded")
	}
}

// writeErrors reads batchhook_store_write_errors_total from /metrics.
func writeErrors(t *testing.T, d *daemonProc) float64 {
	t.Helper()
	_, metrics := get(t, d.admin+"/metrics", "")
	m := regexp.MustCompile(`(?m)^batchhook_store_write_errors_total (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("/metrics has no batchhook_store_write_errors_total:\n%s", metrics)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
