package execsink

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// pipeGrace bounds how long Wait keeps reading the output pipe after the
// command exited. Once the process group is killed nothing in it holds the
// pipe, but a descendant that left the group (setsid) could keep it open
// forever.
const pipeGrace = 5 * time.Second

// run starts the command, waits for it within the timeout and ctx, and
// turns its end into a Result. out, when not nil, receives stdout and
// stderr; otherwise both go to /dev/null.
func (s *Sink) run(ctx context.Context, e sink.Export, out *capture) sink.Result {
	cmd := &exec.Cmd{
		Path: s.path,
		Args: append(append([]string(nil), s.argv...), e.Dir),
		Env:  env(e),
		// "/" rather than the export directory: a command that writes a
		// relative path must not add files to a published export, and "/"
		// exists even after the export is removed.
		Dir: "/",
		// Its own group, so that a timeout kills its children as well.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   pipeGrace,
	}
	if out != nil {
		// The same pointer for both: os/exec then uses one pipe and one
		// goroutine, so capture needs no lock.
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: fmt.Sprintf("start the command: %v", err)}
	}
	pgid := cmd.Process.Pid

	// exited is closed once the leader has exited. Where awaitExit works
	// (Linux) the leader is then a zombie, not yet reaped, so its pid, and
	// with it the group id, cannot be reused by another process before
	// killGroup below has run.
	exited := make(chan struct{})
	var reaped bool
	var waitErr error
	go func() {
		defer close(exited)
		if awaitExit(pgid) == nil {
			return
		}
		waitErr, reaped = cmd.Wait(), true
	}()

	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	var ours *sink.Result
	select {
	case <-exited:
	case <-timer.C:
		ours = &sink.Result{Outcome: sink.Retry, Kind: "timeout",
			Reason: fmt.Sprintf("no exit within %s; process group killed", s.timeout)}
	case <-ctx.Done():
		ours = &sink.Result{Outcome: sink.Retry, Kind: "shutdown",
			Reason: "batchhook is stopping; process group killed"}
	}
	if ours != nil {
		killGroup(pgid)
		<-exited
	}
	// A delivery ends when its command does: anything it left running in
	// its group is killed too, so nothing outlives the run with access to
	// the export, and nothing holds the output pipe open.
	killGroup(pgid)
	if !reaped {
		waitErr = cmd.Wait()
	}
	return classify(cmd.ProcessState, waitErr, ours)
}

// classify reads the leader's wait status. A normal exit wins even when a
// timeout or a shutdown raced with it: the command finished its work.
func classify(ps *os.ProcessState, waitErr error, ours *sink.Result) sink.Result {
	var ws syscall.WaitStatus
	ok := false
	if ps != nil {
		ws, ok = ps.Sys().(syscall.WaitStatus)
	}
	if !ok {
		if ours != nil {
			return *ours
		}
		return sink.Result{Outcome: sink.Retry, Kind: "local", Reason: fmt.Sprintf("wait for the command: %v", waitErr)}
	}
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return sink.Result{Outcome: sink.Delivered}
	case ws.Exited() && ws.ExitStatus() == exitTempFail:
		return sink.Result{Outcome: sink.Retry, Kind: "exit", Reason: "exit status 75 (EX_TEMPFAIL)"}
	case ws.Exited():
		return sink.Result{Outcome: sink.Failed, Kind: "exit", Reason: fmt.Sprintf("exit status %d", ws.ExitStatus())}
	case ours != nil:
		return *ours
	case ws.Signaled():
		sig := ws.Signal()
		return sink.Result{Outcome: sink.Failed, Kind: "signal", Reason: fmt.Sprintf("killed by signal %d (%s)", int(sig), sig)}
	}
	return sink.Result{Outcome: sink.Failed, Kind: "signal", Reason: fmt.Sprintf("ended with wait status %#x", uint32(ws))}
}

// killGroup sends SIGKILL to every process in the group: SIGTERM could be
// ignored, and a command past its timeout gets no second chance. Its error
// is ignored: ESRCH (the group is already empty) is the usual case after a
// clean exit, and EPERM cannot happen for a group our own child leads.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
