package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
)

// TestPaymentsAfterARestoreAreNotSkipped: `batchhook restore` brings back a
// database older than EXPORT_DIR (docs/operations.md: back EXPORT_DIR up after the
// database), so the day file holds lines of events the restored log does
// not know. The seqs of new events must not collide with those lines: the
// file sink skips an event whose seq is not above its day file's last, so
// a reused seq is a new event silently missing from the file (and an http
// webhook-id or a Nats-Msg-Id its receiver already has).
func TestPaymentsAfterARestoreAreNotSkipped(t *testing.T) {
	e := newPayEnv(t, "file")
	exportDir := t.TempDir()
	fs, err := filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	p := e.payments(t, nil, nil, fs)
	e.record(t, 3, t0)
	drain(t, p, "file")
	// The backup: the database as of seq 3, every event delivered.
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(e.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backup, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	e.open(t, "file")
	p = e.payments(t, nil, nil, fs)
	e.record(t, 2, t0.Add(time.Minute)) // seqs 4 and 5, in the day file, then lost by the restore
	drain(t, p, "file")
	// The restore, with the daemon stopped, and a start as the daemon does.
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, store.FileName), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	e.open(t, "file")
	fs, err = filesink.New(exportDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := startPayments(e.st, fs); err != nil {
		t.Fatal(err)
	}
	p = e.payments(t, nil, nil, fs)
	seq, _, err := e.st.RecordPayment(store.PaymentEvent{ReceivedAt: t0.Add(time.Hour), Event: "transaction.paid", Attempt: 1,
		DedupKey: "after-restore"}, []byte(`{"transaction":{"id":"after-restore"}}`))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, p, "file")
	day, err := os.ReadFile(filepath.Join(exportDir, filesink.Dir, filesink.DayOf(t0)+".ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(day), "after-restore") {
		t.Fatalf("the event logged after the restore (seq %d) is not in the day file, yet counted delivered:\n%s", seq, day)
	}
	if n := strings.Count(string(day), fmt.Sprintf(`{"seq":%d,`, seq)); n != 1 {
		t.Fatalf("seq %d is on %d lines of the day file (reused):\n%s", seq, n, day)
	}
	ds, err := e.st.PaymentDeliveries(seq)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered {
		t.Fatalf("deliveries of %d = %+v %v", seq, ds, err)
	}
}

// startPayments is what the daemon does at start before the payment
// dispatcher runs (daemon.paymentDispatcher).
func startPayments(st *store.Store, fs *filesink.Sink) error {
	top, err := fs.LastSeq()
	if err != nil {
		return err
	}
	_, _, err = st.RaisePaymentSeq(top, t0)
	return err
}
