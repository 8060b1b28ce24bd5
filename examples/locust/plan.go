package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/workload"
)

// locustfile is the template; its PLAN line is replaced by the plan.
//
//go:embed locustfile.py
var locustfile string

const planLine = "PLAN = None  # softalloc-locust: the plan\n"

// plan is what the locustfile needs of the workload and the trial, as JSON.
type plan struct {
	// Target is the scheme and host the paths go to: the workload's paths
	// start with "/", so, as the live runner resolves them, the target's own
	// path never applies.
	Target string `json:"target"`
	// RequestTimeout bounds each request, seconds.
	RequestTimeout float64   `json:"requestTimeout"`
	Think          planThink `json:"think"`
	SessionLength  int       `json:"sessionLength"`
	Start          int       `json:"start"`
	Pages          []page    `json:"pages"`
	Users          int       `json:"users"`
	Workers        int       `json:"workers"`
	Timing         struct {
		RampUp   float64 `json:"rampUp"`
		Runtime  float64 `json:"runtime"`
		RampDown float64 `json:"rampDown"`
	} `json:"timing"`
	// ReplyTimeout is how long past the window the master waits for the
	// workers' statistics, if longer than the ramp-down.
	ReplyTimeout float64 `json:"replyTimeout"`
	// ConnectTimeout is the settings' connectTimeout, seconds (runLocust
	// sets it): the users must run by it plus half the ramp-up from the
	// master's start.
	ConnectTimeout float64 `json:"connectTimeout"`
	// Trial names the run in every user's User-Agent (runLocust sets it).
	Trial string `json:"trial,omitempty"`
	// Ramp makes the run a ramp (exec protocol version 2): Users is its
	// first level, Timing a window's (the least settling time after a step,
	// the window, the wait for the workers' statistics), and the levels
	// rise as runRamp's steps say, up to RampMaxUsers.
	Ramp         bool `json:"ramp,omitempty"`
	RampMaxUsers int  `json:"rampMaxUsers,omitempty"`
}

type planThink struct {
	Mean float64 `json:"mean"`
	Cap  float64 `json:"cap"`
}

// page is one interaction: its paths (templates, rendered by the
// locustfile) and its transitions, cumulative, as workload.Page has them.
type page struct {
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Embedded []string  `json:"embedded"`
	Cum      []float64 `json:"cum"`
	To       []int     `json:"to"`
}

// makePlan turns a checked workload (live.ParseWorkload) into the plan.
// think overrides the workload's mean think time when not 0.
func makePlan(w *workload.Workload, target string, think, requestTimeout time.Duration, users, workers int,
	t algorithms.Timing, replyTimeout time.Duration) (plan, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return plan{}, fmt.Errorf("target %q: want an http:// or https:// URL", target)
	}
	p := plan{
		Target:         u.Scheme + "://" + u.Host,
		RequestTimeout: requestTimeout.Seconds(),
		Think:          planThink{Mean: w.ThinkTime.Mean.Duration().Seconds(), Cap: w.ThinkTime.Cap.Duration().Seconds()},
		SessionLength:  w.SessionLength,
		Start:          w.StartIndex(),
		Users:          users,
		Workers:        workers,
		ReplyTimeout:   replyTimeout.Seconds(),
	}
	if think > 0 {
		p.Think.Mean = think.Seconds()
	}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = t.RampUp.Seconds(), t.Runtime.Seconds(), t.RampDown.Seconds()
	for i, it := range w.Interactions {
		wp := w.Page(i)
		pg := page{Name: it.Name, Path: it.Path, Embedded: append([]string{}, it.Embedded...), Cum: wp.Cum, To: make([]int, len(wp.To))}
		if pg.Cum == nil {
			pg.Cum = []float64{}
		}
		for j, to := range wp.To {
			pg.To[j] = int(to)
		}
		p.Pages = append(p.Pages, pg)
	}
	return p, nil
}

// render writes the locustfile with the plan in it. The plan goes in as a
// JSON string literal, which is also a Python string literal (Go escapes
// every control character and quote), read back with json.loads.
func (p plan) render() (string, error) {
	if strings.Count(locustfile, planLine) != 1 {
		return "", fmt.Errorf("locustfile.py: want exactly one line %q", strings.TrimSpace(planLine))
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	lit, err := json.Marshal(string(b))
	if err != nil {
		return "", err
	}
	return strings.Replace(locustfile, planLine, "PLAN = json.loads("+string(lit)+")\n", 1), nil
}
