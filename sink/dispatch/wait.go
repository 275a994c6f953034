package dispatch

import (
	"context"
	"time"
)

// idleWait is how long a sink's loop sleeps when it has nothing to do now:
// BackoffBase after a store error, until the head's retry time when one is
// scheduled (at least 1ms), and never longer than idle.
func idleWait(failed bool, next, now time.Time, base, idle time.Duration) time.Duration {
	switch {
	case failed:
		return base
	case !next.IsZero():
		return min(max(next.Sub(now), time.Millisecond), idle)
	}
	return idle
}

// sleep waits for d, a wakeup on wake or freed (nil: none), or the end of
// ctx; it reports false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake, freed <-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-freed:
	case <-timer.C:
	}
	return true
}
