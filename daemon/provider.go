package daemon

import "github.com/batchhook/batchhook/internal/providerwatch"

// watchProvider builds the watch over the provider's answers: each answer
// is counted in batchhook_provider_responses_total, and a run of 404s with
// no success since start is logged once (provider_misconfigured), shown by
// batchhook_provider_misconfigured and in /readyz's warnings. It does not
// make the daemon unready: webhooks are still recorded, and fetching
// resumes once the address is fixed (DECISIONS 12 keeps readiness about
// what the daemon itself can do).
func (d *Daemon) watchProvider() *providerwatch.Watch {
	var w *providerwatch.Watch
	log := d.log.With().Str("component", "daemon").Logger()
	count := d.metrics.Provider(providerwatch.Classes, func() bool { return w.IsMisconfigured() })
	w = providerwatch.New(providerwatch.Options{Count: count, Misconfigured: func(problem string) {
		log.Error().Str("event", "provider_misconfigured").Str("api_base_url", d.cfg.APIBaseURL).Msg(problem)
	}})
	return w
}

// warnings are /readyz's warnings: problems that leave the daemon ready.
func (d *Daemon) warnings() []string {
	if p := d.provider.Problem(); p != "" {
		return []string{p}
	}
	return nil
}
