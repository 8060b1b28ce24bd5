package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// entry is a Locust StatsEntry as StatsEntry.serialize writes it (the
// fields used here): times in milliseconds, response_times keyed by the
// time rounded as locust.stats.bucket_response_time rounds it.
type entry struct {
	NumRequests       int64            `json:"num_requests"`
	NumFailures       int64            `json:"num_failures"`
	TotalResponseTime float64          `json:"total_response_time"`
	ResponseTimes     map[string]int64 `json:"response_times"`
}

// windowWorker is one worker's part of the window.
type windowWorker struct {
	Worker       string           `json:"worker"`
	ClientID     string           `json:"clientId"`
	UsersAtOpen  int              `json:"usersAtOpen"`
	UsersAtClose int              `json:"usersAtClose"`
	Seconds      float64          `json:"seconds"`
	Total        entry            `json:"total"`
	Errors       map[string]int64 `json:"errors"`
	Pages        map[string]int64 `json:"pages"`
	// Thinks are the think periods that ended in the window, ThinkSeconds
	// the time they lasted (from a page's end to the next one's start) and
	// ThinkAsked the think times drawn for them.
	Thinks       int64   `json:"thinks"`
	ThinkSeconds float64 `json:"thinkSeconds"`
	ThinkAsked   float64 `json:"thinkAsked"`
	// CPU is the worker process's CPU time over the window, in cores.
	CPU float64 `json:"cpu"`
}

// window is what the locustfile's master writes at the end of the trial.
type window struct {
	Users  int `json:"users"`
	Window struct {
		Start   float64 `json:"start"` // Unix seconds, the master's clock
		End     float64 `json:"end"`
		Seconds float64 `json:"seconds"`
	} `json:"window"`
	Workers []windowWorker   `json:"workers"`
	Total   entry            `json:"total"`
	Errors  map[string]int64 `json:"errors"`
	// Pages counts the window's successful pages by interaction.
	Pages map[string]int64 `json:"pages"`
	Error string           `json:"error"`
	// A ramp's window (window-<i>.json): its index, and the load's start
	// (Unix seconds, the master's clock) its edges count from. A ramp's
	// window.json says Ended once the ramp ended as asked.
	Index int     `json:"index"`
	Began float64 `json:"began"`
	Ended bool    `json:"ended"`
}

func readWindow(path string) (window, error) {
	var w window
	b, err := os.ReadFile(path)
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// End is the window's end on the master's clock.
func (w window) End() time.Time {
	return time.UnixMicro(int64(math.Round(w.Window.End * 1e6)))
}

// check refuses a window that is not a measurement of the experiment's load.
func (w window) check(workers int) error {
	if w.Error != "" {
		return fmt.Errorf("%s", w.Error)
	}
	if len(w.Workers) != workers {
		return fmt.Errorf("statistics from %d workers, want %d", len(w.Workers), workers)
	}
	if !(w.Window.Seconds > 0) {
		return fmt.Errorf("a measured window of %g s", w.Window.Seconds)
	}
	open, closed := 0, 0
	var split []string
	for _, x := range w.Workers {
		open += x.UsersAtOpen
		closed += x.UsersAtClose
		split = append(split, fmt.Sprintf("%s %d", x.Worker, x.UsersAtOpen))
	}
	switch {
	case open != w.Users:
		return fmt.Errorf("%d of %d users were running when the window opened (%s), though the workers had reported them all running",
			open, w.Users, strings.Join(split, ", "))
	case closed != w.Users:
		return fmt.Errorf("%d of %d users were running when the window closed", closed, w.Users)
	}
	return nil
}

// histogram is Locust's own response-time distribution of e, in seconds.
// Locust keeps each time rounded to about two significant digits (exact
// whole milliseconds below 100 ms, tens to 1 s, hundreds to 10 s,
// thousands above), so a bucket is the interval that rounds to its key:
// its upper bound is the key plus half the rounding step. Every count is
// exact; a page's time is known to within half a step (0.5 ms below 100 ms,
// at most 5% above). The sum is Locust's exact total.
func histogram(e entry) (algorithms.Histogram, error) {
	type bucket struct {
		le float64
		n  int64
	}
	var bs []bucket
	for k, n := range e.ResponseTimes {
		ms, err := strconv.ParseFloat(k, 64)
		if err != nil || ms < 0 || n < 0 {
			return algorithms.Histogram{}, fmt.Errorf("response_times: want a count of milliseconds >= 0, got %q: %d", k, n)
		}
		if n > 0 {
			bs = append(bs, bucket{(ms + roundingStep(ms)/2) / 1000, n})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	h := algorithms.Histogram{Buckets: []algorithms.Bucket{}, Sum: e.TotalResponseTime / 1000}
	for _, b := range bs {
		h.Buckets = append(h.Buckets, algorithms.Bucket{LE: b.le, Count: b.n})
	}
	if c := h.Count(); c != e.NumRequests {
		return h, fmt.Errorf("response_times count %d pages, num_requests %d", c, e.NumRequests)
	}
	return h, nil
}

// roundingStep is the step locust.stats.bucket_response_time rounds a time
// of ms milliseconds to.
func roundingStep(ms float64) float64 {
	switch {
	case ms < 100:
		return 1
	case ms < 1000:
		return 10
	case ms < 10000:
		return 100
	}
	return 1000
}

// causes writes error counts as the live runner's log line does.
func causes(errs map[string]int64) string {
	return fmt.Sprintf("%d refused, %d timed out, %d 5xx, %d other",
		errs["refused"], errs["timedOut"], errs["serverErrors"], errs["other"])
}
