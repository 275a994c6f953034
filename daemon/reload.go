package daemon

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/fetcher"
)

// Reload re-reads the secret files (SIGHUP). Each reloadable secret of
// config.Secrets configured through its _FILE variable is read again (a
// sink's secret only when that sink is configured); all are checked before
// any is swapped, so a reload that fails (a file missing or empty) keeps
// every old value.
// A new signing secret applies to the next request: the provider switches
// at once and there is no window where both are accepted. Batches waiting
// out a 401/403 backoff are retried at once.
func (d *Daemon) Reload() error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	log := d.log.With().Str("component", "daemon").Logger()
	type swap struct {
		name string
		ptr  *atomic.Pointer[config.Secret]
		next config.Secret
	}
	var swaps []swap
	for _, s := range config.Secrets {
		file := s.File(&d.cfg)
		if !s.Reload || file == "" || (s.Sink != "" && !slices.Contains(d.cfg.SinkNames(), s.Sink)) {
			continue
		}
		next, mode, err := config.ReadSecretFileMode(file)
		if err == nil && s.Check != nil {
			err = s.Check(next) // a weak value is refused as at start
		}
		if err == nil && s.Key != nil {
			next, err = s.Key(next) // the value the daemon uses (the http sink's decoded key)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", config.Var(s.Name+"_FILE"), err)
			log.Error().Str("event", "secret_reload_failed").Err(err).Msg("reload failed; every old value is kept")
			d.metrics.SecretsReloaded(false)
			return err
		}
		if w := config.SecretFileWarning(s.Name, file, mode); w != nil {
			log.Warn().Str("event", w.Event).Str("variable", w.Variable).Str("path", absPath(w.Path)).
				Str("mode", fmt.Sprintf("%04o", w.Mode)).Msg(w.Message)
		}
		swaps = append(swaps, swap{s.Name, d.secrets[s.Name], next})
	}
	batch, pay := d.secrets.current("SIGNING_SECRET")(), d.secrets.current("PAYMENTS_SIGNING_SECRET")()
	for _, s := range swaps {
		switch s.name {
		case "SIGNING_SECRET":
			batch = s.next
		case "PAYMENTS_SIGNING_SECRET":
			pay = s.next
		}
	}
	if config.SameSecret(pay, batch) {
		err := fmt.Errorf("%s would equal %s: each product needs its own secret", config.Var("PAYMENTS_SIGNING_SECRET"), config.Var("SIGNING_SECRET"))
		log.Error().Str("event", "secret_reload_failed").Err(err).Msg("reload failed; every old value is kept")
		d.metrics.SecretsReloaded(false)
		return err
	}
	if len(swaps) == 0 {
		err := errors.New("no secret is configured through a _FILE variable; nothing to reload")
		log.Warn().Str("event", "secret_reload_failed").Err(err).Msg("reload did nothing")
		d.metrics.SecretsReloaded(false)
		return err
	}
	for _, s := range swaps {
		old := s.ptr.Load().Fingerprint()
		s.ptr.Store(&s.next)
		log.Info().Str("event", "secret_reloaded").Str("secret", s.name).Str("old_fingerprint", old).
			Str("new_fingerprint", s.next.Fingerprint()).Bool("changed", old != s.next.Fingerprint()).
			Msg("secret reloaded")
	}
	d.metrics.SecretsReloaded(true)
	if d.submitter != nil {
		d.submitter.Resume() // a chunk held back by a refused key is sent again now
	}
	if n, err := d.store.RetryKindNow(string(fetcher.KindAuth), time.Now()); err != nil {
		log.Error().Str("event", "auth_retry_failed").Err(err).Msg("could not clear the API key backoff")
	} else if n > 0 {
		log.Info().Str("event", "auth_backoff_cleared").Int("batches", n).Msg("batches waiting on a rejected API key retry now")
	}
	return nil
}
