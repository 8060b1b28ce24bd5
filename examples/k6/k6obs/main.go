// Command k6obs turns k6's end-of-test summary (k6 run --summary-export) and
// the per-server measurements of a trial into the observation of softalloc's
// exec protocol, printed on stdout:
//
//	k6obs --summary summary.json --experiment exp.json --servers servers.json --tag phase:run
//
// k6 knows the client's side only: pages (http_reqs), their response times
// (http_req_duration) and failures (http_req_failed). The servers' CPU,
// throughput, response time and pools come from --servers, which the trial
// collects with its own tools (see ../README.md).
//
// k6's summary has no histogram, only the statistics it was asked for
// (summaryTrendStats: min, med, max, p(90), p(95), ...). The response-time
// histogram is rebuilt from them: one bucket per percentile, so goodput at
// an SLA threshold is interpolated between the percentiles around it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

const protocolVersion = 1

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	summary, experiment, servers, tag string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("k6obs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.summary, "summary", "", "k6's --summary-export file")
	fs.StringVar(&o.experiment, "experiment", "", "the experiment message (JSON) the trial was run for")
	fs.StringVar(&o.servers, "servers", "", "the servers' observations: a JSON list, or an object with a servers list (an observation)")
	fs.StringVar(&o.tag, "tag", "phase:run", "the tag of the runtime window's submetrics (http_reqs{phase:run}, ...); empty: the whole test")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.summary == "" || o.experiment == "" || o.servers == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "k6obs: want --summary FILE --experiment FILE --servers FILE")
		return 2
	}
	obs, notes, err := observe(o)
	for _, n := range notes {
		fmt.Fprintf(stderr, "k6obs: %s\n", n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "k6obs: %v\n", err)
		return 1
	}
	out := struct {
		ProtocolVersion int `json:"protocolVersion"`
		algorithms.Observation
	}{protocolVersion, obs}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "k6obs: %v\n", err)
		return 1
	}
	return 0
}

// summary is the part of k6's legacy summary export used here: each metric
// is an object of its statistics ("count", "rate", "avg", "p(95)", ...,
// and "thresholds", which is not a number and is skipped).
type summary struct {
	Metrics map[string]map[string]json.RawMessage `json:"metrics"`
}

// stats returns the numeric statistics of a metric, or false if absent.
func (s summary) stats(name string) (map[string]float64, bool) {
	m, ok := s.Metrics[name]
	if !ok {
		return nil, false
	}
	out := map[string]float64{}
	for k, v := range m {
		var f float64
		if json.Unmarshal(v, &f) == nil {
			out[k] = f
		}
	}
	return out, true
}

func (s summary) names() string {
	var n []string
	for k := range s.Metrics {
		if strings.HasPrefix(k, "http_req") || strings.HasPrefix(k, "iterations") {
			n = append(n, k)
		}
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func observe(o options) (algorithms.Observation, []string, error) {
	var obs algorithms.Observation
	var notes []string
	var sum summary
	if err := readJSON(o.summary, &sum); err != nil {
		return obs, nil, err
	}
	var exp struct {
		ProtocolVersion int `json:"protocolVersion"`
		Timing          struct {
			RuntimeSeconds float64 `json:"runtimeSeconds"`
		} `json:"timing"`
	}
	if err := readJSON(o.experiment, &exp); err != nil {
		return obs, nil, err
	}
	if exp.ProtocolVersion != protocolVersion {
		return obs, nil, fmt.Errorf("experiment %s: protocol version %d, this program speaks %d", o.experiment, exp.ProtocolVersion, protocolVersion)
	}
	name := func(metric string) string {
		if o.tag == "" {
			return metric
		}
		return metric + "{" + o.tag + "}"
	}
	need := func(metric string, keys ...string) (map[string]float64, error) {
		st, ok := sum.stats(name(metric))
		if !ok {
			hint := ""
			if o.tag != "" {
				hint = fmt.Sprintf("; k6 reports a submetric only if a threshold names it: add '%s': [...] to the script's thresholds", name(metric))
			}
			return nil, fmt.Errorf("summary %s: no metric %s (it has %s)%s", o.summary, name(metric), sum.names(), hint)
		}
		for _, k := range keys {
			if _, ok := st[k]; !ok {
				return nil, fmt.Errorf("summary %s: %s has no %q", o.summary, name(metric), k)
			}
		}
		return st, nil
	}
	reqs, err := need("http_reqs", "count", "rate")
	if err != nil {
		return obs, nil, err
	}
	dur, err := need("http_req_duration", "avg", "max")
	if err != nil {
		return obs, nil, err
	}
	var failed float64
	if st, ok := sum.stats(name("http_req_failed")); ok {
		// A rate metric's passes count its true samples: failed requests.
		failed = st["passes"]
	} else {
		notes = append(notes, fmt.Sprintf("no %s in the summary: counting no failed requests", name("http_req_failed")))
	}
	if it, ok := sum.stats(name("iterations")); ok && it["count"] != reqs["count"] {
		notes = append(notes, fmt.Sprintf("%g iterations made %g requests: each request counts as a page", it["count"], reqs["count"]))
	}

	count := int64(math.Round(reqs["count"]))
	errs := int64(math.Round(failed))
	ok := count - errs
	switch {
	case o.tag != "":
		obs.RuntimeSeconds = exp.Timing.RuntimeSeconds
	case reqs["rate"] > 0:
		// The whole test: k6's rate is the count over the test's duration.
		obs.RuntimeSeconds = reqs["count"] / reqs["rate"]
		notes = append(notes, fmt.Sprintf("no --tag: the whole test (%.1f s, ramps included) is the window", obs.RuntimeSeconds))
	}
	if !(obs.RuntimeSeconds > 0) {
		return obs, notes, fmt.Errorf("no measured window: want timing.runtimeSeconds in the experiment (or requests in the summary)")
	}
	obs.Throughput = float64(ok) / obs.RuntimeSeconds
	obs.Errors = errs
	obs.ResponseTimes = histogram(dur, ok)
	if obs.Servers, err = readServers(o.servers); err != nil {
		return obs, notes, err
	}
	return obs, notes, nil
}

// histogram rebuilds a response-time distribution of n values from k6's
// trend statistics (milliseconds): the bucket ending at each percentile
// holds the values between it and the percentile below. The failed requests'
// durations are in k6's statistics too; with few failures that is noise.
func histogram(st map[string]float64, n int64) algorithms.Histogram {
	h := algorithms.Histogram{Buckets: []algorithms.Bucket{}}
	if n <= 0 {
		return h
	}
	type point struct{ q, v float64 }
	var pts []point
	for k, v := range st {
		switch {
		case k == "min":
			pts = append(pts, point{0, v})
		case k == "med":
			pts = append(pts, point{0.5, v})
		case k == "max":
			pts = append(pts, point{1, v})
		case strings.HasPrefix(k, "p(") && strings.HasSuffix(k, ")"):
			p, err := strconv.ParseFloat(k[2:len(k)-1], 64)
			if err == nil && p >= 0 && p <= 100 {
				pts = append(pts, point{p / 100, v})
			}
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].q < pts[j].q || pts[i].q == pts[j].q && pts[i].v < pts[j].v })
	var cum int64
	for _, p := range pts {
		// Values at or below this percentile: at least one at the minimum,
		// all of them at the maximum.
		c := int64(math.Round(p.q * float64(n)))
		switch p.q {
		case 0:
			c = 1
		case 1:
			c = n
		}
		if c <= cum {
			continue
		}
		le := p.v / 1000
		last := len(h.Buckets) - 1
		switch {
		case le <= 0:
			continue // a 0 ms minimum: those values join the next bucket
		case last >= 0 && le <= h.Buckets[last].LE:
			h.Buckets[last].Count += c - cum // equal percentiles: one bucket
		default:
			h.Buckets = append(h.Buckets, algorithms.Bucket{LE: le, Count: c - cum})
		}
		cum = c
	}
	h.Sum = st["avg"] / 1000 * float64(n)
	return h
}

func readServers(path string) ([]algorithms.ServerObservation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var servers []algorithms.ServerObservation
	if err := json.Unmarshal(b, &servers); err == nil {
		return servers, nil
	}
	var obs struct {
		Servers []algorithms.ServerObservation `json:"servers"`
	}
	if err := json.Unmarshal(b, &obs); err != nil || obs.Servers == nil {
		return nil, fmt.Errorf("servers %s: want a JSON list of servers, or an object with a servers list", path)
	}
	return obs.Servers, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
