// Package backoff computes retry delays for the fetcher and the submitter:
// one pure function, so both back off the same way and tests pin it.
package backoff

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delay returns how long to wait before attempt number attempt (1 for the
// first retry). It is a pure function of its inputs so that tests can pin
// it with fixed values:
//
//   - exponential from base (base, 2·base, 4·base, …), capped at max;
//   - jittered into [d/2, d] by jitter ∈ [0, 1), so that batches that failed
//     together do not retry together;
//   - never shorter than the provider's Retry-After, and never longer than
//     max even when Retry-After asks for more (a hostile or broken header
//     must not park a batch for days).
func Delay(attempt int, base, max, retryAfter time.Duration, jitter float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := max
	if attempt <= 62 {
		if exp := base << (attempt - 1); exp > 0 && exp>>(attempt-1) == base && exp < max {
			d = exp
		}
	}
	if !(jitter >= 0) { // also NaN
		jitter = 0
	} else if jitter >= 1 {
		jitter = 0.999999
	}
	d = d/2 + time.Duration(jitter*float64(d-d/2))
	if retryAfter > d {
		d = retryAfter
	}
	if d > max {
		d = max
	}
	return d
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date;
// 0 when absent or bad. Delay caps the result at its max.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > 1<<20 {
			secs = 1 << 20
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
