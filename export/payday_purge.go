package export

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// The payments day files (issue 13): EXPORT_DIR/payments/YYYY-MM-DD.ndjson,
// one per UTC day of receipt, written by the file payment sink. Here is
// what the purger needs of them: which days have a file, and the removal
// of one, reached from the open root one name at a time without following
// a link (see safe.go), like everything else under the export root.

// paymentDaysDir is the directory of the payment day files under the export
// root.
const paymentDaysDir = "payments"

// paymentDayLayout names a day file: its UTC day, then .ndjson.
const paymentDayLayout = "2006-01-02"

const paymentDaySuffix = ".ndjson"

// PaymentDayFiles lists the UTC days that have a day file, oldest first.
// Names that are not exactly YYYY-MM-DD.ndjson are not day files and are
// left alone (an operator's copy, a sink's temporary file). A missing
// directory means none. A link in place of the directory is refused
// (ErrUnsafePath).
func (d *Dir) PaymentDayFiles() ([]time.Time, error) {
	dir, ok, err := d.openPaymentsDir()
	if err != nil || !ok {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir.Name(), err)
	}
	var days []time.Time
	for _, n := range names {
		if day, ok := paymentDay(n); ok {
			days = append(days, day)
		}
	}
	sort.Slice(days, func(i, j int) bool { return days[i].Before(days[j]) })
	return days, nil
}

// paymentDay parses a day file's name; ok is false for any other name.
func paymentDay(name string) (time.Time, bool) {
	if len(name) != len(paymentDayLayout)+len(paymentDaySuffix) || name[len(paymentDayLayout):] != paymentDaySuffix {
		return time.Time{}, false
	}
	day, err := time.Parse(paymentDayLayout, name[:len(paymentDayLayout)])
	if err != nil || day.Format(paymentDayLayout) != name[:len(paymentDayLayout)] {
		return time.Time{}, false
	}
	return day, true
}

// paymentDayFileName is the name of day's file (its UTC date).
func paymentDayFileName(day time.Time) string {
	return day.UTC().Format(paymentDayLayout) + paymentDaySuffix
}

// RemovePaymentDayFile deletes day's file and syncs the directory, so a
// removal that returned nil is durable. A missing file is not an error (a
// crash after the unlink: the next pass finds nothing to do). A link in
// its place is removed itself, never its target; a directory there is
// refused (ErrUnsafePath).
func (d *Dir) RemovePaymentDayFile(day time.Time) error {
	dir, ok, err := d.openPaymentsDir()
	if err != nil || !ok {
		return err
	}
	defer dir.Close()
	name := paymentDayFileName(day)
	st, ok, err := lstatAt(dir, name)
	if err != nil || !ok {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("%s/%s is a directory: %w", dir.Name(), name, ErrUnsafePath)
	}
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove payment day file %s/%s: %w", dir.Name(), name, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("remove payment day file %s: %w", name, err)
	}
	return nil
}

// openPaymentsDir opens EXPORT_DIR/payments without following a link; ok
// is false when it does not exist.
func (d *Dir) openPaymentsDir() (*os.File, bool, error) {
	root, err := os.Open(d.root)
	if err != nil {
		return nil, false, fmt.Errorf("open export root: %w", err)
	}
	defer root.Close()
	dir, _, err := openDirAt(root, paymentDaysDir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return dir, true, nil
}
