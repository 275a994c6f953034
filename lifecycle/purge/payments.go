package purge

import (
	"context"
	"fmt"
	"time"
)

// The payment log's retention (DECISIONS 25): raw bodies go
// RECORD_RETENTION after receipt, the day files EXPORT_RETENTION after
// their UTC day ended.

// PaymentDayFiles are the payments day files (the file payment sink,
// sink/filesink, their only writer: its lock keeps a removal from racing an
// append). Errors are the file system's, wrapped.
type PaymentDayFiles interface {
	// Days lists the UTC days that have a file, oldest first.
	Days() ([]time.Time, error)
	// RemoveDay deletes one day's file durably; a missing one is not an
	// error.
	RemoveDay(day time.Time) error
}

// fileSink is the payment sink that writes the day files.
const fileSink = "file"

// dayCloseGrace is how long after midnight UTC a day file may still get
// an event received before it: a request's receipt and its commit are at
// most the listener's deadlines (seconds) apart. A short EXPORT_RETENTION
// (tests use seconds) never makes a day due sooner than this.
const dayCloseGrace = time.Minute

// purgePaymentBodies reduces payment events received RECORD_RETENTION ago
// to tombstones, one bounded transaction at a time; a body a payment sink
// has not handled yet is kept (logged at debug).
func (p *Purger) purgePaymentBodies(ctx context.Context, now time.Time, r *Result) error {
	before := now.Add(-p.o.RecordRetention)
	total, held := 0, false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, more, h, err := p.o.Store.PurgePaymentBodies(before, p.o.TxLimit, now)
		if err != nil {
			return err
		}
		total, held = total+n, h
		if n > 0 {
			r.Purged[KindPaymentBody] += n
			p.o.Observer.Purged(KindPaymentBody, n)
		}
		if !more {
			break
		}
	}
	if held {
		p.o.Logger.Debug().Str("event", "payment_body_purge_waiting").Time("before", before).
			Msg("payment bodies past BATCHHOOK_RECORD_RETENTION kept: a payment sink has not handled them yet")
	}
	if total > 0 {
		p.o.Logger.Info().Str("event", "payment_bodies_purged").Int("bodies", total).Time("before", before).
			Msg("payment event bodies older than BATCHHOOK_RECORD_RETENTION deleted; the events keep seq, dedup key and sha256")
	}
	return nil
}

// purgePaymentDays deletes the day files whose UTC day ended
// EXPORT_RETENTION ago, once the file sink has handled every event
// received that day (so it will never append to the file again). The
// store is not changed: the decision is made again from the store at every
// pass, so a crash between the unlink and the directory's sync is finished
// by the next pass, and the order needs no intent record.
func (p *Purger) purgePaymentDays(ctx context.Context, now time.Time, r *Result) error {
	days, err := p.o.PaymentDays.Days()
	if err != nil {
		return fmt.Errorf("list payment day files: %w", err)
	}
	for _, day := range days {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := day.Add(24 * time.Hour)
		if now.Before(end.Add(p.o.ExportRetention)) || now.Before(end.Add(dayCloseGrace)) {
			continue
		}
		pending, err := p.o.Store.PaymentDayPending(fileSink, day, end)
		if err != nil {
			return err
		}
		if pending {
			p.o.Logger.Debug().Str("event", "payment_day_file_waiting").Str("day", day.Format(time.DateOnly)).
				Msg("payments day file past BATCHHOOK_EXPORT_RETENTION kept: the file sink has events of that day to write")
			continue
		}
		if err := p.o.PaymentDays.RemoveDay(day); err != nil {
			return fmt.Errorf("delete payments day file of %s: %w", day.Format(time.DateOnly), err)
		}
		r.Purged[KindPaymentDayFile]++
		p.o.Observer.Purged(KindPaymentDayFile, 1)
		p.o.Logger.Info().Str("event", "payment_day_file_purged").Str("day", day.Format(time.DateOnly)).
			Msg("payments day file deleted after BATCHHOOK_EXPORT_RETENTION")
	}
	return nil
}
