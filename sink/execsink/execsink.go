// Package execsink is the `exec` sink: it hands each published export to an
// operator's command (argv, no shell) and reads the answer from its exit
// status. The command runs in a process group of its own with an
// environment that holds only the batch's identity, so none of batchhook's
// secrets reach it, and a command that hangs is killed whole, grandchildren
// included, rather than left holding the export after batchhook gave up.
//
// The sink delivers an export in one run: it has no parts, so it never
// uses sink.Progress; the dispatcher records the delivery when Deliver
// answers Delivered.
package execsink

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
)

// DefaultTimeout bounds one run when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// ChildPath is the PATH the command sees. It is fixed rather than
// batchhook's own, so the command behaves the same whatever environment
// batchhook was started with; a command that needs more names its
// programs by absolute path.
const ChildPath = "/usr/local/bin:/usr/bin:/bin"

// OutputLimit is how much of the command's combined stdout and stderr is
// kept for the log when Options.LogOutput is set. The rest is read and
// discarded, so a chatty command neither grows batchhook's memory nor
// blocks on a full pipe.
const OutputLimit = 4 << 10

// exitTempFail is EX_TEMPFAIL from sysexits.h: the command asks to be run
// again later.
const exitTempFail = 75

// Options configures the exec sink.
type Options struct {
	// Command is the argv to run, without a shell. Command[0] is an
	// absolute path or a name found in batchhook's PATH when New runs;
	// the export directory is appended as the last argument.
	Command []string
	// Timeout bounds one run; past it the process group is killed and the
	// delivery retried. Zero means DefaultTimeout.
	Timeout time.Duration
	// LogOutput logs the first OutputLimit bytes of the command's output
	// (event sink_exec_output). Off by default: the command may print
	// personal data.
	LogOutput bool
	// Logger receives sink_exec_output; the caller sets its component.
	Logger zerolog.Logger
}

// Sink runs a command for each export. It holds no state between runs and
// is safe for concurrent use.
type Sink struct {
	path    string   // Command[0] resolved to an absolute path at New
	argv    []string // Command as given; argv[0] is what the command sees as $0
	timeout time.Duration
	logOut  bool
	log     zerolog.Logger
}

var _ sink.Sink = (*Sink)(nil)

// New checks the options and resolves the command once, so a typo in the
// configuration stops the start instead of failing every delivery.
func New(o Options) (*Sink, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, errors.New("exec sink: command is empty")
	}
	for _, a := range o.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("exec sink: command %q: an argument holds a NUL byte", o.Command[0])
		}
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("exec sink: timeout %s is negative", o.Timeout)
	}
	path, err := resolve(o.Command[0])
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Sink{
		path:    path,
		argv:    append([]string(nil), o.Command...),
		timeout: timeout,
		logOut:  o.LogOutput,
		log:     o.Logger,
	}, nil
}

// resolve finds name the way a shell would and makes the result absolute:
// the command runs in "/" with its own PATH, where a relative or
// PATH-relative name would mean something else.
func resolve(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		// Keep the cause only: exec.Error and fs.PathError would name
		// the command a second time.
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("exec sink: command %q: %w", name, err)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("exec sink: command %q: %w", name, err)
	}
	return abs, nil
}

// Name is the sink's name in BATCHHOOK_SINKS.
func (s *Sink) Name() string { return "exec" }

// Deliver runs the command once for e and classifies how it ended:
//
//	exit 0                         Delivered
//	exit 75 (EX_TEMPFAIL)          Retry, kind "exit"
//	any other exit status          Failed, kind "exit", reason "exit status N"
//	killed by a signal not ours    Failed, kind "signal"
//	still running after Timeout    Retry, kind "timeout" (process group killed)
//	ctx cancelled (shutdown)       Retry, kind "shutdown" (process group killed)
//	could not be started           Retry, kind "local"
//
// A start failure is retried, not failed: it is a fault of this host (the
// program was removed or made unreadable, fork hit a limit), the same for
// every batch, and once an operator repairs it the waiting deliveries go
// out on their own, where Failed would leave every one of them to be
// redelivered by hand. The dispatcher's backoff, capped by BACKOFF_MAX,
// keeps the retries rare, and the pending metrics show them.
//
// The command's output never reaches Result.Reason: it may hold personal
// data. p is not used (one run, no parts).
func (s *Sink) Deliver(ctx context.Context, e sink.Export, _ sink.Progress) sink.Result {
	if err := ctx.Err(); err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "shutdown", Reason: "batchhook is stopping; the command was not started"}
	}
	if !filepath.IsAbs(e.Dir) {
		return sink.Result{Outcome: sink.Failed, Kind: "local", Reason: "export directory is not an absolute path"}
	}
	var out *capture
	if s.logOut {
		out = newCapture(OutputLimit)
	}
	r := s.run(ctx, e, out)
	if out != nil && out.total > 0 {
		s.log.Info().Str("event", "sink_exec_output").Str("sink", s.Name()).Str("batch_id", e.BatchID).
			Bool("truncated", out.truncated()).Int64("output_bytes", out.total).
			Bytes("output", out.buf).Msg("output of the exec sink's command")
	}
	return r
}

// env is the command's whole environment: nothing of batchhook's own is
// passed on, so its secrets (API key, signing secret, admin token) never
// reach the command or its children.
func env(e sink.Export) []string {
	return []string{
		"BATCHHOOK_BATCH_ID=" + e.BatchID,
		"BATCHHOOK_BATCH_STATUS=" + e.Status,
		"BATCHHOOK_EXPORT_DIR=" + e.Dir,
		"BATCHHOOK_EXPORT_VERSION=" + strconv.Itoa(e.Version),
		"PATH=" + ChildPath,
	}
}
