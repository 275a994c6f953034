package authlimit

import (
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// failUntilHeld fails from addr at now until the limiter holds it back,
// and returns how many failures it took.
func failUntilHeld(l *Limiter, addr string, now time.Time) int {
	n := 0
	for l.Wait(addr, now) == 0 && n < 1000 {
		l.Fail(addr, now)
		n++
	}
	return n
}

// An address fails its burst at once, then waits one interval for each
// further failure; its wait says exactly how long.
func TestAnAddressGetsItsBurstThenOneAnInterval(t *testing.T) {
	l := New(Defaults())
	const a = "192.0.2.7:41234"
	if n := failUntilHeld(l, a, t0); n != 5 {
		t.Fatalf("%d failures before the address was held, want 5", n)
	}
	if w := l.Wait(a, t0); w != 10*time.Second {
		t.Fatalf("wait after the burst %v, want 10s", w)
	}
	if w := l.Wait(a, t0.Add(4*time.Second)); w != 6*time.Second {
		t.Fatalf("wait 4s later %v, want 6s", w)
	}
	// Another port of the same address is the same address.
	if w := l.Wait("192.0.2.7:1", t0.Add(4*time.Second)); w != 6*time.Second {
		t.Fatalf("another port of the address waits %v, want 6s", w)
	}
	at := t0.Add(10 * time.Second)
	if n := failUntilHeld(l, a, at); n != 1 {
		t.Fatalf("%d failures after one interval, want 1", n)
	}
	// A minute of guessing past the burst: six more.
	n := 0
	for s := 11; s <= 70; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		if l.Wait(a, now) == 0 {
			l.Fail(a, now)
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d failures in the minute after the burst, want 6", n)
	}
	// Left alone long enough, it gets its whole burst again.
	if n := failUntilHeld(l, a, t0.Add(10*time.Minute)); n != 5 {
		t.Fatalf("%d failures after a quiet spell, want the burst of 5", n)
	}
}

// Another address is not held by one address's failures, until all of
// them together reach the total: then every address waits, a fresh one
// too.
func TestTheTotalHoldsEveryAddress(t *testing.T) {
	l := New(Defaults())
	for i := range 12 {
		if n := failUntilHeld(l, "198.51.100."+strconv.Itoa(i), t0); n != 5 {
			t.Fatalf("address %d: %d failures, want 5", i, n)
		}
	}
	if w := l.Wait("203.0.113.9", t0); w != time.Second {
		t.Fatalf("a fresh address after 60 failures in total waits %v, want 1s", w)
	}
	if w := l.Wait("203.0.113.9", t0.Add(time.Second)); w != 0 {
		t.Fatalf("a fresh address a second later waits %v, want 0", w)
	}
	l.Fail("203.0.113.9", t0.Add(time.Second))
	if w := l.Wait("203.0.113.10", t0.Add(time.Second)); w != time.Second {
		t.Fatalf("the total is one a second past its burst: wait %v", w)
	}
}

// Waiting does not cost: an address that only asks (a right token is
// checked after Wait and counts nothing) is never held.
func TestWaitAloneCostsNothing(t *testing.T) {
	l := New(Defaults())
	for i := range 1000 {
		if w := l.Wait("192.0.2.1", t0.Add(time.Duration(i)*time.Millisecond)); w != 0 {
			t.Fatalf("check %d waits %v with no failure", i, w)
		}
	}
}

// The table of addresses stays within MaxAddrs: addresses whose bucket
// is full again go first, then the fullest; the total still holds.
func TestTheTableOfAddressesIsBounded(t *testing.T) {
	l := New(Limits{MaxAddrs: 8, TotalBurst: 1 << 20})
	for i := range 100 {
		l.Fail("192.0.2."+strconv.Itoa(i), t0)
		if n := l.Addrs(); n > 8 {
			t.Fatalf("%d addresses kept after %d failures, want at most 8", n, i+1)
		}
	}
	// A held address keeps its place over those that failed once.
	held := "198.51.100.1"
	failUntilHeld(l, held, t0)
	for i := range 20 {
		l.Fail("203.0.113."+strconv.Itoa(i), t0)
	}
	if l.Wait(held, t0) == 0 {
		t.Fatal("a held address was forgotten to make room for addresses that failed once")
	}
	// Once its bucket is full again an address is forgotten first.
	later := t0.Add(time.Hour)
	l.Fail("192.0.2.250", later)
	if n := l.Addrs(); n != 1 {
		t.Fatalf("%d addresses kept an hour later, want only the new one", n)
	}
}

// IPv6 addresses count by their /64; IPv4 by the address.
func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:443":              "192.0.2.7",
		"[2001:db8:1:2:aaaa::1]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:1":   "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:80":      "192.0.2.7",
		"[::1]:9090":                 "::/64",
		"not-an-address":             "not-an-address",
		"2001:db8:1:3::1":            "2001:db8:1:3::/64",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

// Recent counts the failures of the last window by whole minutes, and
// says when the last came.
func TestRecentCountsTheWindow(t *testing.T) {
	l := New(Defaults())
	if n, last := l.Recent(t0); n != 0 || !last.IsZero() {
		t.Fatalf("before any failure: %d, %v", n, last)
	}
	l.Fail("192.0.2.1", t0)
	l.Fail("192.0.2.2", t0.Add(5*time.Minute))
	l.Fail("192.0.2.3", t0.Add(5*time.Minute+time.Second))
	if n, last := l.Recent(t0.Add(6 * time.Minute)); n != 3 || !last.Equal(t0.Add(5*time.Minute+time.Second)) {
		t.Fatalf("6 min later: %d, last %v; want 3 and the third's time", n, last)
	}
	if n, _ := l.Recent(t0.Add(15 * time.Minute)); n != 2 {
		t.Fatalf("15 min after the first: %d, want 2 (the first is out of the window)", n)
	}
	if n, _ := l.Recent(t0.Add(21 * time.Minute)); n != 0 {
		t.Fatalf("21 min later: %d, want 0", n)
	}
	// A slot reused a window later starts from zero.
	l.Fail("192.0.2.1", t0.Add(30*time.Minute))
	if n, _ := l.Recent(t0.Add(30 * time.Minute)); n != 1 {
		t.Fatalf("a reused minute: %d, want 1", n)
	}
}

// A clock that steps back neither refills a bucket nor empties it.
func TestAClockSteppingBack(t *testing.T) {
	l := New(Defaults())
	failUntilHeld(l, "192.0.2.1", t0)
	if w := l.Wait("192.0.2.1", t0.Add(-time.Hour)); w != 10*time.Second {
		t.Fatalf("wait with the clock an hour back: %v, want 10s", w)
	}
}
