package submit

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestLimiterNeverAllowsElevenInAnyMinute drives the limiter with a fake
// clock through bursts and trickles and checks every rolling 60 s window
// of the sends it allowed.
func TestLimiterNeverAllowsElevenInAnyMinute(t *testing.T) {
	l := NewLimiter(10, time.Minute, nil)
	now := t0
	var sends []time.Time
	for len(sends) < 45 {
		at := l.Next(now)
		if at.Before(now) {
			t.Fatalf("Next(%v) = %v, in the past", now, at)
		}
		now = at
		l.Record(now)
		sends = append(sends, now)
		now = now.Add(time.Duration(len(sends)%3) * 700 * time.Millisecond) // uneven spacing
	}
	for i := range sends {
		n := 0
		for _, s := range sends[i:] {
			if s.Sub(sends[i]) < time.Minute {
				n++
			}
		}
		if n > 10 {
			t.Fatalf("%d sends in the minute from %v", n, sends[i])
		}
	}
	// And it is not over-cautious: the first ten go without waiting, the eleventh
	// exactly one minute after the first.
	if sends[9].Sub(sends[0]) > 10*time.Second {
		t.Fatalf("first ten spread over %v", sends[9].Sub(sends[0]))
	}
	if got := sends[10].Sub(sends[0]); got != time.Minute {
		t.Fatalf("eleventh send %v after the first, want exactly 1m", got)
	}
}

func TestLimiterRemembersSendsOfThePreviousRun(t *testing.T) {
	recent := []time.Time{t0.Add(20 * time.Second), t0, t0.Add(10 * time.Second)} // unordered on purpose
	l := NewLimiter(3, time.Minute, recent)
	now := t0.Add(30 * time.Second)
	if got := l.Next(now); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Next = %v, want %v (the oldest remembered send + 1m)", got, t0.Add(time.Minute))
	}
	l2 := NewLimiter(3, time.Minute, recent[:2])
	if got := l2.Next(now); !got.Equal(now) {
		t.Fatalf("with room left, Next = %v, want now", got)
	}
}
