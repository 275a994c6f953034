package receiver

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used (all threads, the
// store's writer and the GC included); ok is false where it is unknown.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
