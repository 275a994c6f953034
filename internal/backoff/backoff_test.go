package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/backoff"
)

func TestBackoffFixedValues(t *testing.T) {
	const (
		s = time.Second
		m = time.Minute
	)
	maxDur := time.Duration(math.MaxInt64)
	tests := []struct {
		name       string
		attempt    int
		base, max  time.Duration
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		// base 1s, max 5m, no jitter: half of base·2^(attempt-1).
		{"attempt 1", 1, s, 5 * m, 0, 0, 500 * time.Millisecond},
		{"attempt 2", 2, s, 5 * m, 0, 0, s},
		{"attempt 3", 3, s, 5 * m, 0, 0, 2 * s},
		{"attempt 4", 4, s, 5 * m, 0, 0, 4 * s},
		{"attempt 9: 256s uncapped", 9, s, 5 * m, 0, 0, 128 * s},
		{"attempt 10: 512s capped to 300s", 10, s, 5 * m, 0, 0, 150 * s},
		{"attempt 11 capped", 11, s, 5 * m, 0, 0, 150 * s},
		{"attempt 40 capped", 40, s, 5 * m, 0, 0, 150 * s},
		{"attempt 62 capped", 62, s, 5 * m, 0, 0, 150 * s},
		{"attempt 63 capped", 63, s, 5 * m, 0, 0, 150 * s},
		{"attempt 100 capped", 100, s, 5 * m, 0, 0, 150 * s},
		{"attempt MaxInt capped", math.MaxInt, s, 5 * m, 0, 0, 150 * s},
		{"attempt 0 is 1", 0, s, 5 * m, 0, 0, 500 * time.Millisecond},
		{"attempt -5 is 1", -5, s, 5 * m, 0, 0, 500 * time.Millisecond},
		{"attempt MinInt is 1", math.MinInt, s, 5 * m, 0, 0, 500 * time.Millisecond},

		// Jitter spreads over [d/2, d].
		{"jitter 0.5 attempt 1", 1, s, 5 * m, 0, 0.5, 750 * time.Millisecond},
		{"jitter 0.5 attempt 4", 4, s, 5 * m, 0, 0.5, 6 * s},
		{"jitter 0.25 attempt 3", 3, s, 5 * m, 0, 0.25, 2500 * time.Millisecond},
		{"jitter 0.5 capped", 10, s, 5 * m, 0, 0.5, 225 * s},
		{"negative jitter is 0", 1, s, 5 * m, 0, -0.5, 500 * time.Millisecond},
		{"jitter -Inf is 0", 2, s, 5 * m, 0, math.Inf(-1), s},

		// Another base and cap.
		{"base 3s attempt 5: 48s", 5, 3 * s, m, 0, 0, 24 * s},
		{"base 3s attempt 6: 96s capped to 60s", 6, 3 * s, m, 0, 0, 30 * s},
		{"base above max", 1, 10 * s, 5 * s, 0, 0, 2500 * time.Millisecond},

		// Retry-After.
		{"retry-after larger", 1, s, 5 * m, 10 * s, 0, 10 * s},
		{"retry-after larger than jittered", 3, s, 5 * m, 3 * s, 0.25, 3 * s},
		{"retry-after smaller", 3, s, 5 * m, 200 * time.Millisecond, 0, 2 * s},
		{"retry-after equal to max", 1, s, 5 * m, 5 * m, 0, 5 * m},
		{"retry-after capped at max", 1, s, 5 * m, time.Hour, 0, 5 * m},
		{"retry-after capped at max, late attempt", 20, s, 5 * m, 10 * m, 0.9, 5 * m},
		{"retry-after huge", 100, s, 5 * m, maxDur, 0, 5 * m},

		// Overflow safety: the shift must not wrap into a short or negative delay.
		{"1ns attempt 62: 2^61", 62, 1, maxDur, 0, 0, 1 << 60},
		{"1ns attempt 63", 63, 1, maxDur, 0, 0, maxDur / 2},
		{"4ns attempt 62 wraps to MinInt64", 62, 4, maxDur, 0, 0, maxDur / 2},
		{"5ns attempt 62 wraps negative", 62, 5, maxDur, 0, 0, maxDur / 2},
		{"3ns attempt 62 fits", 62, 3, maxDur, 0, 0, 3 << 60},
		{"1s attempt 35 overflows", 35, s, maxDur, 0, 0, maxDur / 2},
		{"1s attempt 34 fits", 34, s, maxDur, 0, 0, s << 32},
		{"1h attempt 40 overflows", 40, time.Hour, maxDur, 0, 0, maxDur / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := backoff.Delay(tt.attempt, tt.base, tt.max, tt.retryAfter, tt.jitter)
			if got != tt.want {
				t.Errorf("Backoff(%d, %v, %v, %v, %v) = %v (%d), want %v (%d)",
					tt.attempt, tt.base, tt.max, tt.retryAfter, tt.jitter, got, int64(got), tt.want, int64(tt.want))
			}
		})
	}
}

// TestBackoffJitterBounds checks [d/2, d] for every attempt, with d worked
// out by doubling and capping here.
func TestBackoffJitterBounds(t *testing.T) {
	base, max := 500*time.Millisecond, 2*time.Minute
	d := base
	for attempt := 1; attempt <= 70; attempt++ {
		if attempt > 1 {
			d = min(d*2, max)
		}
		lo := backoff.Delay(attempt, base, max, 0, 0)
		if lo != d/2 {
			t.Errorf("attempt %d jitter 0 = %v, want %v", attempt, lo, d/2)
		}
		for _, j := range []float64{0.999999999, 1, 1.5, math.Inf(1)} {
			hi := backoff.Delay(attempt, base, max, 0, j)
			if hi > d || hi < d-d/1000 {
				t.Errorf("attempt %d jitter %v = %v, want within [%v, %v]", attempt, j, hi, d-d/1000, d)
			}
		}
		prev := lo
		for j := 0.0; j < 1; j += 0.125 {
			got := backoff.Delay(attempt, base, max, 0, j)
			if got < d/2 || got > d {
				t.Errorf("attempt %d jitter %v = %v, outside [%v, %v]", attempt, j, got, d/2, d)
			}
			if got < prev {
				t.Errorf("attempt %d: jitter %v gives %v, less than %v for a smaller jitter", attempt, j, got, prev)
			}
			prev = got
		}
	}
}

func TestBackoffNeverDecreasesWithAttempts(t *testing.T) {
	for _, j := range []float64{0, 0.3, 0.99} {
		prev := time.Duration(0)
		for attempt := 1; attempt <= 200; attempt++ {
			got := backoff.Delay(attempt, time.Second, 5*time.Minute, 0, j)
			if got < prev {
				t.Fatalf("jitter %v: attempt %d = %v < attempt %d = %v", j, attempt, got, attempt-1, prev)
			}
			if got <= 0 || got > 5*time.Minute {
				t.Fatalf("jitter %v: attempt %d = %v, outside (0, 5m]", j, attempt, got)
			}
			prev = got
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 7 ":                           7 * time.Second,
		"-3":                            0,
		"soon":                          0,
		"Sun, 22 Nov 2026 10:00:30 GMT": 30 * time.Second,
		"Sun, 22 Nov 2026 09:59:00 GMT": 0, // in the past
	}
	for in, want := range tests {
		if got := backoff.RetryAfter(in, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}
