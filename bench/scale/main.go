// Command scale builds a batchhook database shaped like a year of traffic
// at the provider's limit, for measuring what the daemon does on one: its
// start, a purge pass, the admin API's listings, a backup.
//
//	go run ./bench/scale build -dir DIR -batches 5300000
//
// builds DIR/data/batchhook.db (the daemon's DATA_DIR layout): the batches
// spread evenly over the last -days days, the newest ones exported with
// their whole record, older ones purged as the purger leaves them
// (EXPORT_RETENTION and RECORD_RETENTION, -export-days and -full-days),
// deliveries to -sinks sinks, one submission of 3 chunks per 1,000
// batches, and a payments log of the same age. It writes through the
// store's own encoding and index code (store.BulkLoad), in large
// transactions without fsync and one sync at the end, then checks the
// counts and the indexes. The export directories are not written: the
// database holds no file of them, and nothing the daemon does at start
// reads them. docs/performance.md ("A year of traffic") has the figures.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/batchhook/batchhook/store"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: build, or check a database built before with the
// same options. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "build" && args[0] != "check") {
		fmt.Fprintln(stderr, "usage: scale build|check -dir DIR -batches N [-days 365] [-full-days 90] [-export-days 30] [-due 24h] [-sinks 2] [-export-items 1000] [-payments-per-minute 3] [-seed S] [-now RFC3339]")
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("scale "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var now string
	fs.StringVar(&o.Dir, "dir", "", "directory to build in (the database goes to DIR/data/batchhook.db)")
	fs.IntVar(&o.Batches, "batches", 0, "batches in all (14,400 a day is the provider's limit: 5,256,000 a year)")
	fs.IntVar(&o.Days, "days", 365, "days the batches and payments are spread over, ending now")
	fs.IntVar(&o.FullDays, "full-days", 90, "days a batch keeps its whole record: RECORD_RETENTION (0: for ever)")
	fs.IntVar(&o.ExportDays, "export-days", 30, "days a batch keeps its export: EXPORT_RETENTION (0: for ever)")
	fs.DurationVar(&o.Due, "due", 24*time.Hour, "how much is past each retention and due at the first purge pass (a daemon stopped this long)")
	fs.IntVar(&o.Sinks, "sinks", 2, "delivery sinks besides file, taken in order from "+strings.Join(deliverySinks, ", "))
	fs.IntVar(&o.ExportItems, "export-items", cpfsPerBatch, "result items in each export due at the first purge pass, written to DIR/data/exports (0: none)")
	fs.Float64Var(&o.PaymentsPerMinute, "payments-per-minute", 3, "payment events a minute")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the ids and bodies")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the build to this file")
	fs.StringVar(&now, "now", "", "the time the shape ends at, RFC 3339 (default: now; check needs the build's, which build prints)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if now != "" {
		t, err := time.Parse(time.RFC3339, now)
		if err != nil {
			fmt.Fprintf(stderr, "scale: -now: %v\n", err)
			return 2
		}
		o.Now = t
	}
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "scale: %v\n", err)
		return 2
	}
	if cmd == "build" {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err != nil {
				fmt.Fprintf(stderr, "scale: %v\n", err)
				return 1
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintf(stderr, "scale: %v\n", err)
				return 1
			}
			defer pprof.StopCPUProfile()
		}
		start := time.Now()
		if err := build(o, stderr); err != nil {
			fmt.Fprintf(stderr, "scale: build: %v\n", err)
			return 1
		}
		path := filepath.Join(dataDir(o.Dir), store.FileName)
		fi, err := os.Stat(path)
		if err != nil {
			fmt.Fprintf(stderr, "scale: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "built %s: %d batches, %d bytes (%d a batch) in %s; now %s\n",
			path, o.Batches, fi.Size(), fi.Size()/int64(o.Batches), time.Since(start).Round(time.Second), o.Now.Format(time.RFC3339))
	}
	start := time.Now()
	e, err := verify(o)
	if err != nil {
		fmt.Fprintf(stderr, "scale: check: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "checked in %s: %s\n", time.Since(start).Round(time.Millisecond), summary(e))
	fmt.Fprintf(stdout, "serve it with BATCHHOOK_DATA_DIR=%s BATCHHOOK_SINKS=%s\n", dataDir(o.Dir), strings.Join(append([]string{"file"}, o.sinks()...), ","))
	return 0
}
