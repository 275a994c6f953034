package dispatch

import (
	"context"
	"testing"
	"time"
)

func TestIdleWait(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	base, idle := time.Second, time.Minute
	for _, c := range []struct {
		failed bool
		next   time.Time
		want   time.Duration
	}{
		{true, now.Add(time.Hour), base},
		{false, time.Time{}, idle},
		{false, now.Add(5 * time.Second), 5 * time.Second},
		{false, now.Add(-time.Second), time.Millisecond},
		{false, now.Add(time.Hour), idle},
	} {
		if got := idleWait(c.failed, c.next, now, base, idle); got != c.want {
			t.Errorf("idleWait(%v, %v) = %v; want %v", c.failed, c.next.Sub(now), got, c.want)
		}
	}
}

func TestSleepWakesAndStops(t *testing.T) {
	wake, freed := make(chan struct{}, 1), make(chan struct{}, 1)
	wake <- struct{}{}
	if !sleep(context.Background(), time.Hour, wake, nil) {
		t.Fatal("a wakeup reported a stop")
	}
	freed <- struct{}{}
	if !sleep(context.Background(), time.Hour, nil, freed) {
		t.Fatal("a freed slot reported a stop")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if sleep(ctx, time.Hour, nil, nil) {
		t.Fatal("a cancelled context did not stop the sleep")
	}
}
