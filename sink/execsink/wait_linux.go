package execsink

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until the process pid has exited, without reaping it
// (WNOWAIT): while it is a zombie its pid stays taken, so its process
// group id cannot name anybody else's group when killGroup runs. os/exec's
// Wait reaps it afterwards.
func awaitExit(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("waitid %d: %w", pid, err)
		}
		return nil
	}
}
