package cli

import (
	"fmt"

	"github.com/batchhook/batchhook/admin"
)

// fetchRows are the fetch counters of `batches show`. fetch_attempts counts
// the failed attempts since the last page that succeeded (it drives the
// backoff and is reset by every good page), so it is shown, under that
// name, only while there are some: a fetched batch's 0 read as "never
// fetched". refetches is how many operator refetches replaced the export;
// the export version (the one the sinks receive) also counts each erasure
// that rewrote it.
func fetchRows(b admin.BatchView) [][2]string {
	var rows [][2]string
	if b.FetchAttempts > 0 {
		rows = append(rows, [2]string{"failed fetch attempts", fmt.Sprintf("%d (since the last page fetched)", b.FetchAttempts)})
	}
	rows = append(rows, [2]string{"refetches", fmt.Sprintf("%d (export version %d)", b.Refetches, b.ExportVersion)})
	return rows
}
