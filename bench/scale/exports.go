package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

// dueExport reports whether batch p's export is due at the first purge
// pass at Now (EXPORT_RETENTION past its finish).
func (o *Options) dueExport(p batchPlan) bool {
	return p.state == store.StateExported && o.ExportDays > 0 &&
		!p.finished.After(o.Now.Add(-time.Duration(o.ExportDays)*24*time.Hour))
}

// writeDueExports publishes, through the export directory's own code, the
// export of every batch due at the first purge pass, ExportItems items
// each, so that the pass deletes real files as the daemon's would. The
// younger exports are not written: a year's month of them is hundreds of
// gigabytes, and nothing but a delivery or a purge reads one.
func writeDueExports(o Options, ids []string, root string) (int, error) {
	if o.ExportItems == 0 {
		return 0, nil
	}
	d, err := export.New(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, id := range ids {
		p := o.plan(i)
		if !o.dueExport(p) {
			continue
		}
		items := make([]json.RawMessage, o.ExportItems)
		for j := range items {
			items[j] = resultItem(mix(o.Seed^0xe7, uint64(i)*1_000_003+uint64(j)))
		}
		staged, err := d.Append(id, 0, items)
		if err != nil {
			return n, fmt.Errorf("stage export of %s: %w", id, err)
		}
		b := batchOf(o, p, id, root)
		b.Checkpoint = store.Checkpoint{Done: true, Items: int64(len(items)), Pages: pagesPerBatch, StagedBytes: staged}
		if _, _, err := d.Publish(b, p.finished); err != nil {
			return n, fmt.Errorf("publish export of %s: %w", id, err)
		}
		n++
	}
	return n, nil
}

// resultItem is one result line, about itemBytes long, shaped like the
// provider's found CPF.
func resultItem(r uint64) json.RawMessage {
	b := make([]byte, 0, itemBytes)
	b = append(b, `{"cpf":"`...)
	b = append(b, cpfOf(r)...)
	b = append(b, `","status":"found","name":"`...)
	b = append(b, firstNames[r%uint64(len(firstNames))]...)
	b = append(b, ' ')
	b = append(b, lastNames[(r>>8)%uint64(len(lastNames))]...)
	b = append(b, `","birth_date":"19`...)
	b = strconv.AppendUint(b, 50+(r>>16)%50, 10)
	b = append(b, `-0`...)
	b = strconv.AppendUint(b, 1+(r>>24)%9, 10)
	b = append(b, `-1`...)
	b = strconv.AppendUint(b, (r>>28)%9, 10)
	b = append(b, `","player":{"id":"`...)
	b = append(b, uuidOf(r, mix(r, 1))...)
	b = append(b, `","registered_at":"2025-01-01T00:00:00Z","status":"active","segment":"regular","notes":"`...)
	for len(b) < itemBytes-3 {
		b = append(b, 'x')
	}
	return append(b, `"}}`...)
}
