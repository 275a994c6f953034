// Package authlimit makes guessing a secret cost time. A Limiter counts
// failed checks of a secret per client address and in total, each in a
// token bucket: an address may fail a few times at once (an operator who
// mistypes never notices) and then once per interval, and all addresses
// together may fail a bounded number of times a minute, so many addresses
// guessing a little each add up to no more than one slow guesser.
//
// Past either limit an address must wait before its next check, whatever
// it sends: a correct secret from a throttled address waits too, or the
// limit would only slow a guesser until its right guess, which the check
// would then confirm.
//
// The Limiter is pure: every method takes the time, so tests run it at
// fixed times, and it keeps at most MaxAddrs addresses.
package authlimit

import (
	"net"
	"sync"
	"time"
)

// Limits are a Limiter's settings.
type Limits struct {
	// PerAddrBurst failures an address may make at once, then one each
	// PerAddrEvery.
	PerAddrBurst int
	PerAddrEvery time.Duration
	// TotalBurst failures all addresses together may make at once, then
	// one each TotalEvery.
	TotalBurst int
	TotalEvery time.Duration
	// MaxAddrs bounds the addresses kept; past it the one nearest to
	// being forgotten goes first.
	MaxAddrs int
	// Window is how far back Recent counts failures.
	Window time.Duration
}

// Defaults returns batchhook's limits: five failures from an address,
// then one every 10 s (six a minute); sixty in total, then one a second;
// 4,096 addresses kept; fifteen minutes of recent failures.
func Defaults() Limits {
	return Limits{PerAddrBurst: 5, PerAddrEvery: 10 * time.Second, TotalBurst: 60, TotalEvery: time.Second,
		MaxAddrs: 4096, Window: 15 * time.Minute}
}

// bucket is a token bucket of failures: tokens is how many more failures
// it takes at the time at, up to burst; it regains one each every.
type bucket struct {
	tokens float64
	at     time.Time
}

// level returns b's tokens at now.
func (b bucket) level(now time.Time, burst int, every time.Duration) float64 {
	if b.at.IsZero() {
		return float64(burst)
	}
	el := now.Sub(b.at)
	if el < 0 { // the clock stepped back: no refill, no penalty
		el = 0
	}
	return min(float64(burst), b.tokens+float64(el)/float64(every))
}

// wait is how long until b holds a whole token at now (0: it does).
func (b bucket) wait(now time.Time, burst int, every time.Duration) time.Duration {
	lv := b.level(now, burst, every)
	if lv >= 1 {
		return 0
	}
	return time.Duration((1 - lv) * float64(every))
}

// take removes one token at now.
func (b *bucket) take(now time.Time, burst int, every time.Duration) {
	b.tokens, b.at = b.level(now, burst, every)-1, now
}

// Limiter counts failed checks per address and in total. Its zero value is
// not usable; call New. It is safe for concurrent use.
type Limiter struct {
	l     Limits
	mu    sync.Mutex
	addrs map[string]*bucket
	total bucket
	// minutes counts failures per minute of the last Window, a ring
	// indexed by the minute's number.
	minutes []minute
	last    time.Time
}

type minute struct {
	n  int
	at int64 // unix minute the count is for
}

// New returns a Limiter with limits l; a zero field takes its default.
func New(l Limits) *Limiter {
	d := Defaults()
	if l.PerAddrBurst <= 0 {
		l.PerAddrBurst = d.PerAddrBurst
	}
	if l.PerAddrEvery <= 0 {
		l.PerAddrEvery = d.PerAddrEvery
	}
	if l.TotalBurst <= 0 {
		l.TotalBurst = d.TotalBurst
	}
	if l.TotalEvery <= 0 {
		l.TotalEvery = d.TotalEvery
	}
	if l.MaxAddrs <= 0 {
		l.MaxAddrs = d.MaxAddrs
	}
	if l.Window < time.Minute {
		l.Window = d.Window
	}
	return &Limiter{l: l, addrs: map[string]*bucket{}, minutes: make([]minute, int(l.Window/time.Minute))}
}

// Limits returns the limits in force.
func (l *Limiter) Limits() Limits { return l.l }

// Wait returns how long addr must wait before its next check at now: 0
// when it may check now. Either limit holds it: its own, or the total.
func (l *Limiter) Wait(addr string, now time.Time) time.Duration {
	key := Key(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.total.wait(now, l.l.TotalBurst, l.l.TotalEvery)
	if b := l.addrs[key]; b != nil {
		w = max(w, b.wait(now, l.l.PerAddrBurst, l.l.PerAddrEvery))
	}
	return w
}

// Fail counts a failed check from addr at now.
func (l *Limiter) Fail(addr string, now time.Time) {
	key := Key(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total.take(now, l.l.TotalBurst, l.l.TotalEvery)
	b := l.addrs[key]
	if b == nil {
		l.makeRoom(now)
		b = &bucket{}
		l.addrs[key] = b
	}
	b.take(now, l.l.PerAddrBurst, l.l.PerAddrEvery)
	m := now.Unix() / 60
	slot := &l.minutes[int(m%int64(len(l.minutes)))]
	if slot.at != m {
		*slot = minute{at: m}
	}
	slot.n++
	if now.After(l.last) {
		l.last = now
	}
}

// makeRoom keeps the table under MaxAddrs before an address is added:
// first it forgets every address whose bucket is full again (it would
// start afresh anyway), then, if none is, the fullest one.
func (l *Limiter) makeRoom(now time.Time) {
	if len(l.addrs) < l.l.MaxAddrs {
		return
	}
	var fullest string
	most := -1.0
	for k, b := range l.addrs {
		lv := b.level(now, l.l.PerAddrBurst, l.l.PerAddrEvery)
		if lv >= float64(l.l.PerAddrBurst) {
			delete(l.addrs, k)
			continue
		}
		if lv > most {
			fullest, most = k, lv
		}
	}
	if len(l.addrs) >= l.l.MaxAddrs {
		delete(l.addrs, fullest)
	}
}

// Recent returns the failures counted in the Window before now (by whole
// minutes) and the time of the last one (zero when none came).
func (l *Limiter) Recent(now time.Time) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, n := now.Unix()/60, 0
	for _, m := range l.minutes {
		if m.at > cur-int64(len(l.minutes)) && m.at <= cur {
			n += m.n
		}
	}
	return n, l.last
}

// Addrs says how many addresses the table holds, for tests.
func (l *Limiter) Addrs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

// Key is the address a check is counted under: the IP of a host:port (or
// of a bare IP), an IPv6 address by its /64, since one machine commonly
// holds a whole /64; anything else as given.
func Key(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
