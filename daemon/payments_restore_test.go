package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
)

// A restored database older than EXPORT_DIR (docs/operations.md: back EXPORT_DIR up
// after the database) must not number new payment events with seqs the
// day files hold: the file sink would skip them as written. Fails without
// raisePaymentSeq at start: the event after the restore never reaches
// the day file.
func TestPaymentSeqsAfterARestoreAreNotReused(t *testing.T) {
	dir := t.TempDir()
	cfg, ln, _ := testConfig(t, dir)
	cfg.Sinks = "file"
	if err := cfg.Validate(SinkRules()); err != nil {
		t.Fatal(err)
	}
	start := func() *Daemon {
		d := New(cfg, zerolog.Nop())
		d.payments = true
		if err := d.Start(ln); err != nil {
			t.Fatal(err)
		}
		ln = nil
		return d
	}
	d := start()
	recordPayments(t, d.store, 1, 2)
	waitFor(t, func() bool { return len(dayLines(t, cfg.ExportDir)) == 2 })
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(filepath.Join(cfg.DataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ListenAddr = "127.0.0.1:0"
	d = start()
	recordPayments(t, d.store, 3, 2) // seqs 3 and 4: in the day file, not in the backup
	waitFor(t, func() bool { return len(dayLines(t, cfg.ExportDir)) == 4 })
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, store.FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}
	d = start()
	defer d.Stop(context.Background())
	recordPayments(t, d.store, 10, 1)
	waitFor(t, func() bool {
		c, _ := d.store.PaymentCursor("file")
		last, _ := d.store.LastPaymentSeq()
		return c.Through == last
	})
	lines := dayLines(t, cfg.ExportDir)
	if len(lines) != 5 || !strings.Contains(lines[4], `"tx-10"`) || !strings.HasPrefix(lines[4], `{"seq":5,`) {
		t.Fatalf("day file after the restore:\n%s\nwant a fifth line, seq 5, for tx-10", strings.Join(lines, "\n"))
	}
}
