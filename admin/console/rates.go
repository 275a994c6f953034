package console

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// The overview's rate charts come from the daemon's own counters, sampled
// every Options.SampleEvery into a ring that keeps the last chartPoints
// samples (an hour at the default 15s): no history is stored, so a
// restart starts the charts again.

// Totals are the daemon's running counters since start, as the charts
// need them.
type Totals struct {
	// Accepted: batch and payments webhooks accepted.
	Accepted float64
	// Refused: webhooks refused with 401.
	Refused float64
	// Pages: result pages fetched.
	Pages float64
	// FetchErrors: failed fetch attempts.
	FetchErrors float64
	// Exported: batches exported.
	Exported float64
	// Delivered and DeliveryFailures: sink delivery attempts that
	// delivered, and that failed (retried or failed for good).
	Delivered, DeliveryFailures float64
}

// chartPoints is how many samples the ring keeps.
const chartPoints = 240

type sample struct {
	at time.Time
	t  Totals
}

type rates struct {
	mu      sync.Mutex
	samples []sample
	max     int
}

func newRates(max int) *rates { return &rates{max: max} }

func (r *rates) add(at time.Time, t Totals) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, sample{at, t})
	if len(r.samples) > r.max {
		r.samples = append(r.samples[:0], r.samples[len(r.samples)-r.max:]...)
	}
}

// chart is one rate chart as the overview draws it: an SVG polyline of
// the per-minute rate between samples.
type chart struct {
	Title string
	// Points is the polyline's points in the chart's 300×60 box.
	Points string
	// Peak and Last are the highest and the latest per-minute rates;
	// Span is how far back the chart reaches.
	Peak, Last string
	Span       string
	// Empty: fewer than two samples yet.
	Empty bool
}

const chartW, chartH = 300.0, 60.0

// charts draws every series from the samples kept and, when given (live
// is not nil), the counters as they are now, so that the last point is
// always current and a daemon started a moment ago has a chart.
func (r *rates) charts(now time.Time, live *Totals) []chart {
	r.mu.Lock()
	s := append([]sample(nil), r.samples...)
	r.mu.Unlock()
	if live != nil && (len(s) == 0 || now.Sub(s[len(s)-1].at) >= time.Second) {
		s = append(s, sample{now, *live})
	}
	series := []struct {
		title string
		of    func(Totals) float64
	}{
		{"Webhooks accepted /min", func(t Totals) float64 { return t.Accepted }},
		{"Webhooks refused (401) /min", func(t Totals) float64 { return t.Refused }},
		{"Pages fetched /min", func(t Totals) float64 { return t.Pages }},
		{"Fetch errors /min", func(t Totals) float64 { return t.FetchErrors }},
		{"Batches exported /min", func(t Totals) float64 { return t.Exported }},
		{"Deliveries delivered /min", func(t Totals) float64 { return t.Delivered }},
		{"Delivery attempts failed /min", func(t Totals) float64 { return t.DeliveryFailures }},
	}
	out := make([]chart, 0, len(series))
	for _, se := range series {
		out = append(out, draw(se.title, s, se.of))
	}
	return out
}

// draw computes one chart: the rate between consecutive samples (a
// counter that went down, a restart, counts as 0), scaled to the box.
func draw(title string, s []sample, of func(Totals) float64) chart {
	c := chart{Title: title}
	if len(s) < 2 {
		c.Empty = true
		return c
	}
	vals := make([]float64, 0, len(s)-1)
	peak := 0.0
	for i := 1; i < len(s); i++ {
		dt := s[i].at.Sub(s[i-1].at).Minutes()
		d := of(s[i].t) - of(s[i-1].t)
		v := 0.0
		if dt > 0 && d > 0 {
			v = d / dt
		}
		vals = append(vals, v)
		peak = max(peak, v)
	}
	if len(vals) == 1 { // one interval: a level line across the box
		vals = append(vals, vals[0])
	}
	var b strings.Builder
	for i, v := range vals {
		x := chartW
		if len(vals) > 1 {
			x = float64(i) * chartW / float64(len(vals)-1)
		}
		y := chartH
		if peak > 0 {
			y = chartH - v/peak*(chartH-2)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	c.Points = b.String()
	c.Peak, c.Last = rate(peak), rate(vals[len(vals)-1])
	c.Span = human(s[len(s)-1].at.Sub(s[0].at))
	return c
}

func rate(v float64) string {
	if v >= 10 || v == 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
