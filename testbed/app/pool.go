package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// level tracks how many units of a pool are busy and integrates that count
// over time, so that Prometheus's rate() of the integral is the exact mean
// busy units over any window (a sampled gauge would miss short bursts).
type level struct {
	mu      sync.Mutex
	size    int
	busy    int
	waiting int
	last    time.Time
	area    float64 // unit-seconds busy
	fullT   float64 // seconds with every unit busy
}

func newLevel(size int) *level { return &level{size: size, last: time.Now()} }

// advance integrates up to now; the caller holds mu.
func (l *level) advance(now time.Time) {
	dt := now.Sub(l.last).Seconds()
	if dt > 0 {
		l.area += float64(l.busy) * dt
		if l.busy >= l.size {
			l.fullT += dt
		}
		l.last = now
	}
}

func (l *level) change(busy, waiting int) {
	l.mu.Lock()
	l.advance(time.Now())
	l.busy += busy
	l.waiting += waiting
	l.mu.Unlock()
}

// snapshot returns the integrals up to now and the current counts.
func (l *level) snapshot() (area, fullT float64, busy, waiting int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(time.Now())
	return l.area, l.fullT, l.busy, l.waiting
}

// errQueueFull is a request refused because the accept queue is full, as
// Tomcat refuses connections beyond acceptCount.
var errQueueFull = errors.New("accept queue full")

// threadPool is the app tier's bounded handler pool: at most size requests
// run at once, at most queue more wait (FIFO), the rest are refused.
type threadPool struct {
	sem   chan struct{}
	queue int
	l     *level
}

func newThreadPool(size, queue int) *threadPool {
	return &threadPool{sem: make(chan struct{}, size), queue: queue, l: newLevel(size)}
}

// acquire takes a thread, waiting in the accept queue when none is free.
func (p *threadPool) acquire(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
		p.l.change(1, 0)
		return nil
	default:
	}
	p.l.mu.Lock()
	if p.l.waiting >= p.queue {
		p.l.mu.Unlock()
		return errQueueFull
	}
	p.l.advance(time.Now())
	p.l.waiting++
	p.l.mu.Unlock()
	select {
	case p.sem <- struct{}{}:
		p.l.change(1, -1)
		return nil
	case <-ctx.Done():
		p.l.change(0, -1)
		return ctx.Err()
	}
}

func (p *threadPool) release() {
	<-p.sem
	p.l.change(-1, 0)
}

// poolCollector exports each pool's size, busy and waiting units and the
// integrals bboard_pool_busy_seconds_total and bboard_pool_full_seconds_total.
type poolCollector struct {
	pools                           map[string]*level
	size, busy, waiting, area, full *prometheus.Desc
}

func newPoolCollector(pools map[string]*level) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("bboard_pool_"+name, help, []string{"pool"}, nil)
	}
	return &poolCollector{
		pools:   pools,
		size:    d("size", "Units of the pool (threads: the handler pool; connections: SetMaxOpenConns)."),
		busy:    d("busy", "Units busy now."),
		waiting: d("waiting", "Requests waiting for a unit now."),
		area:    d("busy_seconds_total", "Integral of busy units over time: rate() is the mean busy units."),
		full:    d("full_seconds_total", "Time with every unit busy: rate() is the share of time the pool was full."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.size, c.busy, c.waiting, c.area, c.full} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, l := range c.pools {
		area, full, busy, waiting := l.snapshot()
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(l.size), name)
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(busy), name)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(waiting), name)
		ch <- prometheus.MustNewConstMetric(c.area, prometheus.CounterValue, area, name)
		ch <- prometheus.MustNewConstMetric(c.full, prometheus.CounterValue, full, name)
	}
}
