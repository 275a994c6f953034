package purge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/lifecycle/purge"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
)

func (e *env) payPurger(t *testing.T, exportRet, recordRet time.Duration) *purge.Purger {
	t.Helper()
	days, err := filesink.New(e.dir.Root())
	if err != nil {
		t.Fatal(err)
	}
	p, err := purge.New(purge.Options{Store: e.st, Files: files{e.dir}, Logger: zerolog.New(e.logs), Observer: e.obs,
		ExportRetention: exportRet, RecordRetention: recordRet, Interval: time.Hour, TxLimit: 2, PaymentDays: days})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) logPayment(t *testing.T, key string, at time.Time) uint64 {
	t.Helper()
	seq, _, err := e.st.RecordPayment(store.PaymentEvent{DedupKey: key, ReceivedAt: at, BodySHA256: "s"}, []byte(item))
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// writeDay plays the file sink: a day file with one line.
func (e *env) writeDay(t *testing.T, day string) string {
	t.Helper()
	dir := filepath.Join(e.dir.Root(), "payments")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, day+".ndjson")
	if err := os.WriteFile(p, []byte(`{"seq":1,"body":`+item+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPassPurgesPaymentBodiesAfterRecordRetention(t *testing.T) {
	e := newEnv(t)
	e.st.SetPaymentSinks([]string{"file", "http"})
	for i := range 5 {
		e.logPayment(t, string(rune('a'+i)), t0.Add(time.Duration(i)*day))
	}
	if err := e.st.PaymentsDelivered("file", 5, t0); err != nil {
		t.Fatal(err)
	}
	if err := e.st.PaymentsDelivered("http", 3, t0); err != nil {
		t.Fatal(err)
	}
	p := e.payPurger(t, 0, 90*day)
	// At t0+94d the first five are past retention; http has handled 1 to 3.
	r, err := p.Pass(context.Background(), t0.Add(94*day+time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Purged[purge.KindPaymentBody] != 3 || e.obs.n[purge.KindPaymentBody] != 3 {
		t.Fatalf("purged %v, want 3 payment bodies", r.Purged)
	}
	for seq := uint64(1); seq <= 5; seq++ {
		b, _ := e.st.PaymentBody(seq)
		if (b == nil) != (seq <= 3) {
			t.Errorf("seq %d: body kept = %v", seq, b != nil)
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"event":"payment_bodies_purged"`) || !strings.Contains(logs, `"bodies":3`) ||
		!strings.Contains(logs, `"event":"payment_body_purge_waiting"`) || strings.Contains(logs, "52998224725") {
		t.Fatalf("logs:\n%s", logs)
	}
}

func TestPassDeletesPaymentDayFilesOnceTheFileSinkHasTheDay(t *testing.T) {
	e := newEnv(t)
	e.st.SetPaymentSinks([]string{"file"})
	d1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	e.logPayment(t, "a", d1.Add(10*time.Hour))
	e.logPayment(t, "b", d1.Add(23*time.Hour+59*time.Minute+59*time.Second))
	e.logPayment(t, "c", d1.Add(24*time.Hour+time.Second))
	f1, f2, f3 := e.writeDay(t, "2026-11-01"), e.writeDay(t, "2026-11-02"), e.writeDay(t, "2026-11-03")
	p := e.payPurger(t, 30*day, 0)

	// 30 days after 2026-11-01 ended, but the file sink has only event a:
	// b (received that day) is still to be written there.
	if err := e.st.PaymentsDelivered("file", 1, d1); err != nil {
		t.Fatal(err)
	}
	now := d1.Add(31*day + time.Hour)
	if _, err := p.Pass(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if !exists(t, f1) {
		t.Fatal("a day file the file sink still appends to was deleted")
	}
	if err := e.st.PaymentsDelivered("file", 2, d1); err != nil {
		t.Fatal(err)
	}
	r, err := p.Pass(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	// Day 1 goes; day 2 has c pending and day 3 is not due (ended 29d ago).
	if exists(t, f1) || !exists(t, f2) || !exists(t, f3) || r.Purged[purge.KindPaymentDayFile] != 1 {
		t.Fatalf("after b delivered: day1 %v day2 %v day3 %v, purged %v", exists(t, f1), exists(t, f2), exists(t, f3), r.Purged)
	}
	if !strings.Contains(e.logs.String(), `"event":"payment_day_file_purged"`) || !strings.Contains(e.logs.String(), `"day":"2026-11-01"`) {
		t.Fatalf("logs:\n%s", e.logs)
	}
	// A day not yet EXPORT_RETENTION old stays whatever the sink did.
	if err := e.st.PaymentsDelivered("file", 3, d1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pass(context.Background(), d1.Add(32*day)); err != nil {
		t.Fatal(err)
	}
	if exists(t, f2) != false || !exists(t, f3) {
		t.Fatalf("at day 32: day2 %v (want gone), day3 %v (want kept)", exists(t, f2), exists(t, f3))
	}
}

// A day file is never deleted within dayCloseGrace of its day's end, even
// with a tiny EXPORT_RETENTION, and a file sink that is not configured for
// payments does not hold a due file back.
func TestPaymentDayFileGraceAndUnconfiguredFileSink(t *testing.T) {
	e := newEnv(t)
	d1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	e.logPayment(t, "a", d1.Add(time.Hour))
	f1 := e.writeDay(t, "2026-11-01")
	p := e.payPurger(t, time.Second, 0)
	if _, err := p.Pass(context.Background(), d1.Add(24*time.Hour+10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !exists(t, f1) {
		t.Fatal("deleted 10 s after the day ended")
	}
	if _, err := p.Pass(context.Background(), d1.Add(24*time.Hour+2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if exists(t, f1) {
		t.Fatal("kept, although no file sink will write to it")
	}
}
