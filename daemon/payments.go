package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/dispatch"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/sink/natssink"
)

// The payments product's delivery: the payment sinks are
// BATCHHOOK_SINKS minus exec (an exec sink is handed an export directory,
// which a payment event is not), file included when listed. The kafka and
// nats sinks are the same objects as for batches (one producer, one
// connection); file is the day-file sink below EXPORT_DIR/payments.

// paymentDispatcher tells the store the payment sinks and builds their
// dispatcher; nil when payments are off or no sink takes them. Call it
// after dispatcher (it reuses its sinks) and before the receiver serves.
func (d *Daemon) paymentDispatcher() (*dispatch.Payments, error) {
	cfg := d.cfg
	// The day files are looked after (purged, erased) whenever they may
	// exist, also when file no longer takes payments or payments are off.
	if d.payments || dirExists(filepath.Join(cfg.ExportDir, filesink.Dir)) {
		fs, err := filesink.New(cfg.ExportDir)
		if err != nil {
			// payments/ is part of the export directory: its problems
			// are the operator's, as the export root's are (exit 2).
			name, path := cfg.ExportDirVar()
			if derr := dirError(name, path, err); errors.Is(derr, ErrDirConfig) {
				return nil, derr
			}
			return nil, fmt.Errorf("%s: %w", config.Var(name), err)
		}
		d.paymentFiles = fs
	}
	if !d.payments {
		return nil, nil
	}
	names := paymentSinks(cfg)
	d.store.SetPaymentSinks(names)
	log := d.log.With().Str("component", "payments").Logger()
	if err := d.raisePaymentSeq(log); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		log.Warn().Str("event", "payment_sinks_none").Strs("sinks", cfg.SinkNames()).
			Msg("payment events are logged but delivered nowhere: " + noPayments(cfg) + "; add " + orList(paymentKinds()) + " to BATCHHOOK_SINKS")
		return nil, nil
	}
	sinks := make(map[string]sink.PaymentSink, len(names))
	for _, name := range names {
		k, _ := kindOf(name)
		if k.New == nil { // file: the day files below the export directory
			sinks[name] = d.paymentFiles
			continue
		}
		ps, ok := d.sinks[name].(sink.PaymentSink)
		if !ok {
			return nil, fmt.Errorf("%s: the %s sink cannot take payment events", config.Var("SINKS"), name)
		}
		if k.StartPayments != nil {
			if err := k.StartPayments(d, ps); err != nil {
				return nil, err
			}
		}
		sinks[name] = ps
	}
	return dispatch.NewPayments(dispatch.PaymentOptions{
		Outbox: d.store, Sinks: sinks, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
		Observer: d.metrics.PaymentDeliveries(d.store, names), Logger: log,
	})
}

// raisePaymentSeq keeps a restored (older) database from numbering new
// events with seqs the day files already hold (store.RaisePaymentSeq):
// the file sink would skip such an event as written. Before the receiver
// serves.
func (d *Daemon) raisePaymentSeq(log zerolog.Logger) error {
	if d.paymentFiles == nil {
		return nil
	}
	top, err := d.paymentFiles.LastSeq()
	if err != nil {
		return fmt.Errorf("%s: %w", config.Var("EXPORT_DIR"), err)
	}
	before, raised, err := d.store.RaisePaymentSeq(top, time.Now().UTC())
	if err != nil {
		return err
	}
	if raised {
		log.Warn().Str("event", "payment_seq_raised").Uint64("from", before).Uint64("to", top).
			Msg("the payment day files hold seqs the database does not know (a restored backup?): new events are numbered after them")
	}
	return nil
}

// checkNATSPayments is the start check of the nats sink's payments
// subject (DECISIONS 30): a reachable server without a stream for it stops
// the start (exit 2); an unreachable one is a warning, and deliveries
// retry.
func checkNATSPayments(d *Daemon, ps sink.PaymentSink) error {
	ns, ok := ps.(*natssink.Sink)
	if !ok {
		return nil // a test's stand-in
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsCheckTimeout)
	defer cancel()
	switch err := ns.CheckPayments(ctx); {
	case errors.Is(err, natssink.ErrNoStream):
		return fmt.Errorf("%w: %s: %w", ErrSinkConfig, config.Var("NATS_PAYMENTS_SUBJECT"), err)
	case err != nil:
		d.log.Warn().Str("component", "sink").Str("sink", "nats").Str("event", "nats_unreachable").
			Str("error", err.Error()).Msg("the NATS server did not answer at start; payment deliveries retry until it does")
	}
	return nil
}

// paymentKinds are the names of the sinks that take payment events.
func paymentKinds() []string {
	var out []string
	for _, k := range sinkKinds {
		if k.Payments {
			out = append(out, k.Name)
		}
	}
	return out
}

// noPayments says which configured sinks take no payment events, for the
// warning that none does.
func noPayments(cfg config.Config) string {
	var out []string
	for _, name := range cfg.SinkNames() {
		if k, _ := kindOf(name); !k.Payments {
			out = append(out, name)
		}
	}
	verb := " does"
	if len(out) > 1 {
		verb = " do"
	}
	return orList(out) + verb + " not take them"
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// PaymentFiles is the file payment sink (nil when payments are off or
// file is not a sink): the purge removes its day files and the erasure
// drops lines through it, since it is the only writer of
// EXPORT_DIR/payments.
func (d *Daemon) PaymentFiles() *filesink.Sink { return d.paymentFiles }

// dirExists reports whether path is a directory (not following a link:
// filesink refuses a link there anyway).
func dirExists(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.IsDir()
}
