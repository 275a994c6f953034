package export

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestPaymentDayFilesListAndRemoveWithoutFollowingLinks(t *testing.T) {
	root := t.TempDir()
	d, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if days, err := d.PaymentDayFiles(); err != nil || days != nil {
		t.Fatalf("no payments directory: %v %v", days, err)
	}
	pay := filepath.Join(root, "payments")
	if err := os.Mkdir(pay, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"2026-11-02.ndjson", "2026-11-01.ndjson", "2026-11-3.ndjson", "2026-13-01.ndjson",
		"notes.txt", "2026-11-01.ndjson.tmp", "2026-11-04.ndjson"} {
		if err := os.WriteFile(filepath.Join(pay, n), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(pay, "2026-11-05.ndjson")); err != nil {
		t.Fatal(err)
	}
	day := func(s string) time.Time { d, _ := time.Parse("2006-01-02", s); return d }
	days, err := d.PaymentDayFiles()
	want := []time.Time{day("2026-11-01"), day("2026-11-02"), day("2026-11-04"), day("2026-11-05")}
	if err != nil || !reflect.DeepEqual(days, want) {
		t.Fatalf("days = %v %v, want %v", days, err, want)
	}
	if err := d.RemovePaymentDayFile(day("2026-11-01")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(pay, "2026-11-01.ndjson")); !os.IsNotExist(err) {
		t.Fatal("day file not removed")
	}
	for _, n := range []string{"2026-11-02.ndjson", "2026-11-01.ndjson.tmp", "notes.txt"} {
		if _, err := os.Stat(filepath.Join(pay, n)); err != nil {
			t.Fatalf("%s removed too: %v", n, err)
		}
	}
	if err := d.RemovePaymentDayFile(day("2026-11-01")); err != nil {
		t.Fatalf("removing it again: %v", err)
	}
	// A link in a day file's place is removed itself, its target kept.
	if err := d.RemovePaymentDayFile(day("2026-11-05")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep me" {
		t.Fatalf("the link's target was touched: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(pay, "2026-11-05.ndjson")); !os.IsNotExist(err) {
		t.Fatal("the link stayed")
	}
	// A directory in a day file's place is refused.
	if err := os.Mkdir(filepath.Join(pay, "2026-11-06.ndjson"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.RemovePaymentDayFile(day("2026-11-06")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("directory in a day file's place: %v", err)
	}
	// A link in place of the payments directory is never followed.
	if err := os.RemoveAll(pay); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "2026-11-02.ndjson"), []byte("x"), 0o600)
	if err := os.Symlink(elsewhere, pay); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PaymentDayFiles(); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("list through a linked directory: %v", err)
	}
	if err := d.RemovePaymentDayFile(day("2026-11-02")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("remove through a linked directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "2026-11-02.ndjson")); err != nil {
		t.Fatal("a file behind the link was removed")
	}
}
