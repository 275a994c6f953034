// Package daemon is batchhook's lifecycle owner, the top of the house
// below the commands. It wires every stage to the store: the webhook
// receiver, the fetcher and its export directory, the submitter and
// reconciler, the delivery and payment dispatchers with the sinks of its
// registry (sinkKinds), the purger, erasures, metrics and the admin API.
// It starts them in order and stops them in reverse (stop taking webhooks,
// stop the loops, then the dispatchers and sinks, close the database
// last), and it reloads the secrets on SIGHUP. The serve command, the demo
// and the tests all run batchhook through it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchhook/batchhook/internal/buildinfo"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/internal/httpserver"
	"github.com/batchhook/batchhook/internal/providerwatch"
	"github.com/batchhook/batchhook/internal/runmark"
	"github.com/batchhook/batchhook/lifecycle/rejectkeep"
	"github.com/batchhook/batchhook/metrics"
	"github.com/batchhook/batchhook/receiver"
	"github.com/batchhook/batchhook/sink"
	"github.com/batchhook/batchhook/sink/dispatch"
	"github.com/batchhook/batchhook/sink/filesink"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// LockTimeout is how long Start waits for another process's database lock.
const LockTimeout = time.Second

// ShutdownTimeout bounds how long Stop waits for in-flight webhook requests.
const ShutdownTimeout = 10 * time.Second

// Daemon is one running batchhook.
type Daemon struct {
	cfg config.Config
	log zerolog.Logger

	// secrets are the reloadable secrets, swapped whole on reload
	// (reload.go); readers load them per use.
	secrets  heldSecrets
	reloadMu sync.Mutex
	// makeSinks builds the delivery sinks (buildSinks; tests put their
	// own sink in).
	makeSinks func(config.Config, func() []byte) (map[string]sink.Sink, error)

	store *store.Store
	// exports is the export directory: the fetcher stages and publishes
	// into it, the sinks read what it published.
	exports   *export.Dir
	metrics   *metrics.Metrics
	recv      *receiver.Server
	submitter *submit.Submitter
	admin     *admin.Server
	addr      net.Addr
	adminAddr net.Addr
	// pprof serves Go's profiles when BATCHHOOK_PPROF_ADDR is set (pprof.go).
	pprof     *httpserver.Server
	pprofAddr net.Addr
	listening atomic.Bool
	cancel    context.CancelFunc
	// loops are the background loops (fetcher, submitter, reconciler,
	// purger);
	// each sends its result on loopErr when it stops.
	loops   int
	loopErr chan error
	// The dispatcher stops after the other loops (the fetcher's last
	// Finish may queue deliveries) and before the store closes.
	dispatchCancel context.CancelFunc
	dispatchErr    chan error
	// sinks are closed after the dispatcher stops (those with a Close:
	// the kafka producer, the nats connection).
	sinks map[string]sink.Sink
	// payments turns on the payment delivery (payments.go); it follows
	// whether the payments signing secret is set. paymentFiles is the file
	// payment sink when file is one.
	payments       bool
	paymentFiles   *filesink.Sink
	paymentsCancel context.CancelFunc
	paymentsErr    chan error
	// fatal carries the store's failure: the daemon can no longer serve
	// and its process must exit for the supervisor to restart it.
	fatal chan error
	// provider watches the provider's answers for a base URL that
	// cannot be right (404 to everything): a metric and /readyz say so.
	provider *providerwatch.Watch
	// run is the data directory's run marker (runmark.go); previousFailed
	// is what it said at start, for batchhook_previous_run_failed; ended
	// is set once this run's end is recorded (a failed commit is recorded
	// when seen, before the stop that follows).
	run            *runmark.Marker
	previousFailed bool
	previousRun    runmark.End
	ended          atomic.Bool
	// startErr is the error Start failed with, for the run marker.
	startErr error
	// build is the binary's version, commit and Go release, for the
	// started line and batchhook_build_info.
	build buildinfo.Info
	// startedAt is when Start began, for the status summary.
	startedAt time.Time
	// dataDir is BATCHHOOK_DATA_DIR made absolute at the start, for the
	// started line and the status summary.
	dataDir string

	stopOnce sync.Once
	stopErr  error
}

// New returns a daemon for cfg; Start runs it.
func New(cfg config.Config, log zerolog.Logger) *Daemon {
	d := &Daemon{cfg: cfg, log: log, fatal: make(chan error, 1), payments: cfg.PaymentsEnabled(), build: buildinfo.Read()}
	d.makeSinks = func(c config.Config, key func() []byte) (map[string]sink.Sink, error) {
		return buildSinks(c, key, func(name string) (string, error) { return d.store.StableID(name) }, log)
	}
	d.secrets = holdSecrets(&cfg)
	return d
}

// Start opens the store, releases batches a previous run left in fetching,
// binds the webhook listener and starts the workers. When ln is non-nil it
// is used instead of binding LISTEN_ADDR (the demo binds its own loopback
// port before the simulator needs the URL); Start owns it from then on and
// closes it on failure. On error, whatever was started is stopped again.
func (d *Daemon) Start(ln net.Listener) (err error) {
	defer func() {
		if err != nil {
			if ln != nil && d.addr == nil {
				ln.Close() // Start owns a listener handed to it
			}
			// Quietly: the caller logs start_failed, and a "stopped"
			// line before it would read as a clean stop.
			d.startErr = err
			_ = d.stop(context.Background(), false)
		}
	}()
	cfg := d.cfg
	d.startedAt = time.Now()
	d.dataDir = absPath(cfg.DataDir)
	logWarnings(d.log, cfg.Warnings)
	if d.store, err = store.Open(cfg.DataDir, LockTimeout); err != nil {
		return dirError("DATA_DIR", cfg.DataDir, err)
	}
	d.beginRun()
	if n := d.store.MigratedRecords(); n > 0 {
		d.log.Info().Str("component", "store").Str("event", "records_migrated").Int("batches", n).
			Msg("batch records moved to this version's layout (once per database; an older batchhook cannot read it)")
	}
	for _, b := range d.store.Backfills() {
		d.log.Info().Str("component", "store").Str("event", "index_backfilled").Str("index", b.Index).Int("records", b.Records).
			Msg("an index this version keeps was filled from every batch record (once per database, or again after an earlier batchhook wrote to it)")
	}
	// Before any worker: Finish queues a delivery for each of these.
	d.store.SetSinks(deliverySinks(cfg))
	if n, err := d.store.ReleaseLeases(time.Now()); err != nil {
		return err
	} else if n > 0 {
		d.log.Info().Str("component", "daemon").Str("event", "leases_released").Int("batches", n).
			Msg("batches left in fetching by the previous run resume from their checkpoint")
	}
	unknown, err := d.store.ResolveSending(time.Now())
	if err != nil {
		return err
	}
	for _, c := range unknown {
		d.log.Error().Str("component", "submitter").Str("event", "chunk_submit_unknown").Str("submission_id", c.SubmissionID).
			Int("chunk", c.Index).Int("cpfs", c.CPFCount).Str("reason", c.LastError).
			Msg("the provider may have accepted this chunk; it is not sent again automatically (see docs/operations.md, submit_unknown)")
	}
	if d.exports, err = export.New(cfg.ExportDir); err != nil {
		// The wrapped error shows the export path; the variable is the one
		// the operator set (DATA_DIR when the exports are its default).
		name, path := cfg.ExportDirVar()
		return dirError(name, path, err)
	}
	if err := d.recoverExports(); err != nil {
		return err
	}
	d.metrics = metrics.New(d.store, time.Now)
	d.metrics.InitSinks(deliverySinks(cfg))
	d.metrics.Init(metricLabels())
	d.metrics.PreviousRun(d.previousFailed)
	d.metrics.BuildInfo(d.build)
	disp, err := d.dispatcher()
	if err != nil {
		return err
	}
	pdisp, err := d.paymentDispatcher()
	if err != nil {
		return err
	}
	// After the payment dispatcher: a resumed erasure drops lines from the
	// payments day files through the file sink.
	eraser, err := d.erasures()
	if err != nil {
		return err
	}
	d.provider = d.watchProvider()
	client, err := pageClient(cfg, d.secrets.current("API_KEY"), d.provider.Observe)
	if err != nil {
		return err
	}
	f, err := fetcher.New(fetcher.Options{
		Queue: d.store, Stager: d.exports, Pager: client, Workers: cfg.FetchWorkers,
		Logger:    d.log.With().Str("component", "fetcher").Logger(),
		Retention: cfg.Retention, NotFoundGrace: cfg.NotFoundGrace, PageLimit: cfg.PageLimit,
		BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Observer: d.metrics,
	})
	if err != nil {
		return err
	}
	purger, err := d.purger()
	if err != nil {
		return err
	}
	keeper := rejectkeep.New(d.store, cfg.RejectedKeep, d.log.With().Str("component", "receiver").Logger(), nil)
	loops := []func(context.Context) error{f.Run, d.watchStore, purger.Run, keeper.Run, d.backfillStateIndex}
	sub, rec, svc, err := d.submitSide(client)
	if err != nil {
		return err
	}
	d.submitter = sub
	loops = append(loops, sub.Run, rec.Run, d.releaseMapped)
	proxies, err := cfg.TrustedProxyNets()
	if err != nil {
		return err
	}
	d.recv, err = receiver.New(receiver.Options{
		Path: cfg.WebhookPath, MaxBodyBytes: cfg.MaxBodyBytes,
		Secret: d.secrets.current("SIGNING_SECRET"), Store: d.store,
		Logger: d.log.With().Str("component", "receiver").Logger(), Observer: d.metrics, OnQuarantine: d.metrics.Quarantined,
		MaxConnections: cfg.MaxConnections, LogDropped: d.metrics.LogLineDropped,
		Payments: d.paymentsWebhook(), TrustedProxies: proxies,
		KeepRejected: func(r store.Rejected) { keeper.Keep(r) },
	})
	if err != nil {
		return err
	}
	ui := d.console()
	consoleHosts, err := cfg.ConsoleHostNames()
	if err != nil {
		return err
	}
	d.admin, err = admin.New(admin.Options{
		Store: d.store, Token: d.secrets.current("ADMIN_TOKEN"), Metrics: d.metrics.Handler(),
		Submissions: svc, SubmitWait: sub.Wait, Erasures: eraser, MaxSubmissionBytes: cfg.MaxSubmissionBytes, Retention: cfg.Retention,
		Ready: d.ready, Warnings: d.warnings, Logger: d.log.With().Str("component", "admin").Logger(),
		LogDropped: d.metrics.LogLineDropped, Payments: d.store, PaymentsEnabled: cfg.PaymentsEnabled(),
		Rejected: d.store, Status: d.statusFacts, UI: ui.build, ConsoleHosts: consoleHosts,
		AuthFailed: d.metrics.AdminAuthFailed,
	})
	if err != nil {
		return err
	}
	adminLn, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (BATCHHOOK_ADMIN_ADDR): %w", cfg.AdminAddr, err)
	}
	// Loopback is decided from the bound address, not the configured name.
	if err := config.CheckAdminBound(adminLn.Addr(), len(cfg.AdminToken) > 0); err != nil {
		adminLn.Close()
		return err
	}
	if ui.err != nil {
		adminLn.Close()
		return ui.err
	}
	if ui.c != nil {
		loops = append(loops, ui.c.Run)
	}
	d.adminAddr = adminLn.Addr()
	d.admin.Serve(adminLn)
	if err := d.servePprof(cfg.PprofAddr); err != nil {
		return err
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.ListenAddr); err != nil {
			return fmt.Errorf("listen on %s (BATCHHOOK_LISTEN_ADDR): %w", cfg.ListenAddr, err)
		}
	}
	d.addr = ln.Addr()
	d.recv.Serve(ln)
	d.listening.Store(true)

	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.loops, d.loopErr = len(loops), make(chan error, len(loops))
	for _, run := range loops {
		go func() { d.loopErr <- run(ctx) }()
	}
	dctx, dcancel := context.WithCancel(context.Background())
	d.dispatchCancel, d.dispatchErr = dcancel, make(chan error, 1)
	go func() { d.dispatchErr <- disp.Run(dctx) }()
	if pdisp != nil {
		pctx, pcancel := context.WithCancel(context.Background())
		d.paymentsCancel, d.paymentsErr = pcancel, make(chan error, 1)
		go func() { d.paymentsErr <- pdisp.Run(pctx) }()
	}

	d.log.Info().Str("component", "daemon").Str("event", "started").
		Str("version", d.build.Version).Str("commit", d.build.Commit).Str("go", d.build.Go).
		Str("listen_addr", d.addr.String()).
		Str("admin_addr", d.adminAddr.String()).Bool("admin_token", len(cfg.AdminToken) > 0).
		Str("webhook_path", cfg.WebhookPath).Str("data_dir", d.dataDir).Str("export_dir", d.exports.Root()).
		Str("api_base_url", cfg.APIBaseURL).Int("fetch_workers", cfg.FetchWorkers).
		Strs("sinks", cfg.SinkNames()).Int("sink_workers", cfg.SinkWorkers).
		Str("signing_secret_fingerprint", cfg.SigningSecret.Fingerprint()).
		Str("api_key_fingerprint", cfg.APIKey.Fingerprint()).
		Bool("payments", cfg.PaymentsEnabled()).Str("payments_webhook_path", paymentsPath(cfg)).
		Str("payments_signing_secret_fingerprint", paymentsFingerprint(cfg)).
		Int("submit_per_minute", cfg.SubmitPerMinute).Int("max_in_flight", cfg.MaxInFlight).
		Strs("above_provider_limits", cfg.AboveProviderLimits()).Msg("batchhook is serving")
	return nil
}

// AdminAddr is the bound admin address.
func (d *Daemon) AdminAddr() net.Addr { return d.adminAddr }

// ready is /readyz: the store takes a write and the webhook listener is
// bound. A rejected API key is not a readiness problem (webhooks are still
// recorded); it shows in the metrics and logs. A failed write makes it
// false until a later write commits (an empty probe commit succeeds even on
// a full disk, so it does not count), and a failed commit for good.
func (d *Daemon) ready() error {
	if !d.listening.Load() {
		return errors.New("webhook listener not serving")
	}
	if err := d.store.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := d.store.Ping(); err != nil {
		return fmt.Errorf("store not writable: %w", err)
	}
	return nil
}

// Fatal delivers the error that ended the daemon's ability to serve (a
// failed commit: the store refuses everything). The caller then stops the
// daemon, whose waiting requests are answered 503, and exits non-zero: the
// database is not reopened in the same process (DECISIONS 31).
func (d *Daemon) Fatal() <-chan error { return d.fatal }

// watchStore is the loop that turns the store's failure into Fatal.
func (d *Daemon) watchStore(ctx context.Context) error {
	select {
	case <-d.store.Failed():
		err := d.store.Err()
		d.log.Error().Str("component", "daemon").Str("event", "store_failed").Err(err).
			Msg("a commit failed: the store refuses every request from now on; batchhook exits for its supervisor to restart it")
		d.recordFailedCommit(err)
		d.fatal <- err
	case <-ctx.Done():
	}
	return nil
}

// Addr is the bound webhook address (useful when LISTEN_ADDR ends in :0).
func (d *Daemon) Addr() net.Addr { return d.addr }

// ExportDir is the absolute export root.
func (d *Daemon) ExportDir() string { return d.exports.Root() }

// Batch returns the record of a batch.
func (d *Daemon) Batch(id string) (*store.Batch, error) { return d.store.Get(id) }

// Deliveries returns the batch's deliveries to the sinks (the demo waits
// on them as the admin API shows them).
func (d *Daemon) Deliveries(id string) ([]store.Delivery, error) { return d.store.Deliveries(id) }

// Stop stops taking webhooks (waiting for in-flight requests up to
// ShutdownTimeout or ctx), stops the workers (each puts its batch back at
// its last checkpoint) and closes the database. Calling it again returns
// the first result.
func (d *Daemon) Stop(ctx context.Context) error { return d.stop(ctx, true) }

// stop is Stop; logStopped is false when Start fails, so that no "stopped"
// line precedes the caller's start_failed.
func (d *Daemon) stop(ctx context.Context, logStopped bool) error {
	d.stopOnce.Do(func() {
		var errs []error
		d.listening.Store(false)
		if d.recv != nil && d.addr != nil {
			sctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
			errs = append(errs, d.recv.Shutdown(sctx))
			cancel()
		}
		if d.pprof != nil {
			sctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
			errs = append(errs, d.pprof.Shutdown(sctx))
			cancel()
		}
		if d.cancel != nil {
			d.cancel()
			for range d.loops {
				errs = append(errs, <-d.loopErr)
			}
		}
		if d.dispatchCancel != nil {
			d.dispatchCancel()
			errs = append(errs, <-d.dispatchErr)
		}
		if d.paymentsCancel != nil {
			d.paymentsCancel()
			errs = append(errs, <-d.paymentsErr)
		}
		for _, s := range d.sinks {
			switch c := s.(type) {
			case io.Closer:
				errs = append(errs, c.Close())
			case interface{ Close() }:
				c.Close()
			}
		}
		if d.admin != nil && d.adminAddr != nil {
			sctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
			errs = append(errs, d.admin.Shutdown(sctx))
			cancel()
		}
		if d.store != nil {
			errs = append(errs, d.store.Close())
		}
		d.stopErr = errors.Join(errs...)
		d.recordEnd(d.startErr, d.stopErr)
		if logStopped {
			d.log.Info().Str("component", "daemon").Str("event", "stopped").Msg("batchhook stopped")
		}
	})
	return d.stopErr
}

// dispatcher builds the sinks and the dispatcher that drives them.
func (d *Daemon) dispatcher() (*dispatch.Dispatcher, error) {
	cfg := d.cfg
	sinks, err := d.makeSinks(cfg, d.secrets.current("HTTP_SINK_SECRET"))
	if err != nil {
		return nil, err
	}
	d.sinks = sinks
	return dispatch.New(dispatch.Options{
		Outbox: d.store, Exports: d.exports, Sinks: sinks, Workers: cfg.SinkWorkers, KeepExports: keepExports(cfg),
		BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Observer: d.metrics,
		Logger: d.log.With().Str("component", "dispatcher").Logger(),
	})
}
