package daemon

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/httpserver"
	"github.com/batchhook/batchhook/internal/logsample"
)

// servePprof serves Go's profiles on BATCHHOOK_PPROF_ADDR (loopback only;
// off when unset), on a listener of its own so that profiling never shares
// a port with the webhook or the admin API. It uses its own mux: importing
// net/http/pprof also registers on http.DefaultServeMux, which nothing in
// batchhook serves.
func (d *Daemon) servePprof(addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (%s): %w", addr, config.Var("PPROF_ADDR"), err)
	}
	if err := config.CheckPprofBound(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A CPU profile or trace runs for its ?seconds= (30 by default) before
	// it writes: the write deadline leaves room for that.
	// The listener is loopback, but a browser on this machine can reach
	// it under a stranger's name through DNS rebinding: only a loopback
	// Host is served.
	srv := &http.Server{Handler: httpserver.RequireLoopbackHost(mux), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Minute,
		MaxHeaderBytes: httpserver.MaxHeaderBytes(16 << 10), DisableGeneralOptionsHandler: true}
	// Anyone on this machine can reach it: its lines are sampled like the
	// other listeners' strangers' lines.
	sampled := logsample.New(20, time.Second, d.metrics.LogLineDropped).Logger(d.log.With().Str("component", "pprof").Logger(), httpserver.EventAmbiguous)
	d.pprof = httpserver.New("profile listener", srv, httpserver.LogRefused(sampled, "pprof", nil))
	d.pprof.Serve(ln)
	d.pprofAddr = ln.Addr()
	d.log.Warn().Str("component", "daemon").Str("event", "pprof_serving").Str("pprof_addr", ln.Addr().String()).
		Msg("Go profiles are served on " + ln.Addr().String() + " (BATCHHOOK_PPROF_ADDR): for measuring, not for production")
	return nil
}
