package daemon

import (
	"net/http"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/admin/console"
)

// consoleUI builds the operator's console when the admin server asks for
// it (it hands over its own handler), and keeps what came of it for
// Start: the console, whose Run is one of the loops, or the error.
type consoleUI struct {
	d   *Daemon
	c   *console.Console
	err error
	// build is admin.Options.UI; nil when BATCHHOOK_CONSOLE is false.
	build func(admin.UIParts) http.Handler
}

func (d *Daemon) console() *consoleUI {
	u := &consoleUI{d: d}
	if d.cfg.Console {
		u.build = u.make
	}
	return u
}

func (u *consoleUI) make(p admin.UIParts) http.Handler {
	d := u.d
	m := d.metrics
	u.c, u.err = console.New(console.Options{
		API: p.API, Token: d.secrets.current("ADMIN_TOKEN"), Refused: p.Refused, Guard: p.Guard,
		Logger: d.log.With().Str("component", "console").Logger(), SessionTTL: d.cfg.ConsoleSession,
		Totals: func() console.Totals {
			return console.Totals{
				Accepted:         m.Total("batchhook_webhook_requests_total", "outcome", "accepted"),
				Refused:          m.Total("batchhook_webhook_requests_total", "outcome", "unauthorized"),
				Pages:            m.Total("batchhook_fetch_pages_total", ""),
				FetchErrors:      m.Total("batchhook_fetch_errors_total", ""),
				Exported:         m.Total("batchhook_batches_finished_total", "state", "exported"),
				Delivered:        m.Total("batchhook_sink_deliveries_total", "outcome", "delivered"),
				DeliveryFailures: m.Total("batchhook_sink_deliveries_total", "outcome", "retry", "failed"),
			}
		},
	})
	if u.err != nil {
		return http.NotFoundHandler()
	}
	return u.c
}
