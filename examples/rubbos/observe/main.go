// Command observe turns what a RUBBoS trial left behind (sar -u output per
// host, Apache and Tomcat access logs with the time taken per request) into
// the observation of softalloc's exec protocol, printed on stdout.
//
//	observe --experiment exp.json --start 2024-03-05T10:00:00+01:00 \
//	    --page-prefix /rubbos/servlet/ \
//	    --sar web-1=web-1.sar --sar app-1=app-1.sar ... \
//	    --log web-1=us:web-1.access.log --log app-1=ms:app-1.access.log ...
//
// Every server of the experiment needs a --sar file; a server with a --log
// also gets its throughput, response time and thread-pool occupancy, and the
// web tier's logs give the end-to-end page statistics. See ../README.md.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

const protocolVersion = 1

// experiment is the part of the exec protocol's experiment message used here.
type experiment struct {
	ProtocolVersion int    `json:"protocolVersion"`
	ExperimentID    string `json:"experimentId"`
	Tiers           []struct {
		Name  string `json:"name"`
		Role  string `json:"role"`
		Pools struct {
			Threads     int `json:"threads"`
			Connections int `json:"connections"`
		} `json:"pools"`
		Servers []string `json:"servers"`
	} `json:"tiers"`
	Timing struct {
		RuntimeSeconds float64 `json:"runtimeSeconds"`
	} `json:"timing"`
}

// logFile is one --log: a server's access log and the unit of its last field.
type logFile struct {
	path string
	unit float64
}

type options struct {
	experiment string
	start      time.Time
	pagePrefix string
	sar        map[string]string
	logs       map[string]logFile
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "observe: %v\n", err)
		return 2
	}
	obs, err := observe(o)
	if err != nil {
		fmt.Fprintf(stderr, "observe: %v\n", err)
		return 1
	}
	out := struct {
		ProtocolVersion int `json:"protocolVersion"`
		algorithms.Observation
	}{protocolVersion, obs}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "observe: %v\n", err)
		return 1
	}
	return 0
}

// keyValues is a repeatable NAME=VALUE flag.
type keyValues map[string]string

func (kv keyValues) String() string { return "" }

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want SERVER=VALUE, got %q", s)
	}
	if _, dup := kv[k]; dup {
		return fmt.Errorf("server %q given twice", k)
	}
	kv[k] = v
	return nil
}

var units = map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("observe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var start string
	sar, logs := keyValues{}, keyValues{}
	fs.StringVar(&o.experiment, "experiment", "", "the experiment message (JSON) the trial was run for")
	fs.StringVar(&start, "start", "", "start of the measured window, RFC 3339 (its length is the experiment's runtime)")
	fs.StringVar(&o.pagePrefix, "page-prefix", "", "count as pages only web requests whose path starts so (e.g. /rubbos/servlet/); default all")
	fs.Var(sar, "sar", "SERVER=FILE: the server's `sar -u` output over the window (repeat per server)")
	fs.Var(logs, "log", "SERVER=UNIT:FILE: the server's access log, its last field the time taken in UNIT us, ms or s (repeat)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.experiment == "" || start == "" {
		return o, fmt.Errorf("want --experiment FILE and --start TIME")
	}
	var err error
	if o.start, err = time.Parse(time.RFC3339, start); err != nil {
		return o, fmt.Errorf("--start: %w", err)
	}
	o.sar = sar
	o.logs = map[string]logFile{}
	for server, v := range logs {
		u, path, ok := strings.Cut(v, ":")
		unit, known := units[u]
		if !ok || !known || path == "" {
			return o, fmt.Errorf("--log %s=%s: want SERVER=UNIT:FILE with UNIT us (Apache %%D), ms (Tomcat %%D up to 10.0) or s (%%T)", server, v)
		}
		o.logs[server] = logFile{path, unit}
	}
	return o, nil
}

func readExperiment(path string) (experiment, error) {
	var e experiment
	b, err := os.ReadFile(path)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("experiment %s: %w", path, err)
	}
	if e.ProtocolVersion != protocolVersion {
		return e, fmt.Errorf("experiment %s: protocol version %d, this program speaks %d", path, e.ProtocolVersion, protocolVersion)
	}
	if !(e.Timing.RuntimeSeconds > 0) {
		return e, fmt.Errorf("experiment %s: want timing.runtimeSeconds > 0", path)
	}
	return e, nil
}

// observe assembles the observation of the window [start, start+runtime).
func observe(o options) (algorithms.Observation, error) {
	e, err := readExperiment(o.experiment)
	if err != nil {
		return algorithms.Observation{}, err
	}
	T := e.Timing.RuntimeSeconds
	end := o.start.Add(time.Duration(T * float64(time.Second)))
	obs := algorithms.Observation{RuntimeSeconds: T}
	known := map[string]bool{}
	var pages algorithms.Recorder
	var npages int64
	var webLogs int
	for _, t := range e.Tiers {
		for _, name := range t.Servers {
			known[name] = true
			s := algorithms.ServerObservation{Name: name, Tier: t.Name}
			path, ok := o.sar[name]
			if !ok {
				return obs, fmt.Errorf("server %s: no --sar %s=FILE: every server needs its CPU utilisation", name, name)
			}
			if s.CPU, err = sarFile(path); err != nil {
				return obs, fmt.Errorf("server %s: sar %s: %w", name, path, err)
			}
			lf, ok := o.logs[name]
			if !ok {
				obs.Servers = append(obs.Servers, s)
				continue
			}
			reqs, err := logFileRequests(lf)
			if err != nil {
				return obs, fmt.Errorf("server %s: log %s: %w", name, lf.path, err)
			}
			st := serverStats(reqs, o.start, end)
			s.Throughput, s.ResponseTime = float64(st.count)/T, st.meanDuration()
			if t.Pools.Threads > 0 {
				s.Pools = []algorithms.PoolObservation{{
					Name: algorithms.PoolThreads, Size: t.Pools.Threads,
					// Little's law over the window: mean requests in service.
					Busy: min(st.busySeconds/T, float64(t.Pools.Threads)),
					// Second-resolution %t cannot place requests finely
					// enough to say when every thread was busy.
					FullShare: -1,
				}}
			}
			obs.Servers = append(obs.Servers, s)
			if t.Role == algorithms.RoleWeb {
				webLogs++
				for _, r := range reqs {
					if !inWindow(r, o.start, end) || !strings.HasPrefix(r.path, o.pagePrefix) {
						continue
					}
					if r.status >= 500 {
						obs.Errors++
						continue
					}
					pages.Add(r.duration)
					npages++
				}
			}
		}
	}
	for _, m := range []map[string]bool{keysOf(o.sar), keysOfLogs(o.logs)} {
		for _, name := range sortedNames(m) {
			if !known[name] {
				return obs, fmt.Errorf("server %q is not in the experiment (it has %s)", name, strings.Join(sortedNames(known), ", "))
			}
		}
	}
	if webLogs == 0 {
		return obs, fmt.Errorf("no --log for a web-tier server: the end-to-end page statistics come from the web tier's access logs")
	}
	obs.ResponseTimes = pages.Histogram()
	if obs.ResponseTimes.Buckets == nil {
		obs.ResponseTimes.Buckets = []algorithms.Bucket{} // [], not null, when no page finished
	}
	obs.Throughput = float64(npages) / T
	return obs, nil
}

func sarFile(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	u, _, err := cpuUtilization(f)
	return u, err
}

func logFileRequests(lf logFile) ([]request, error) {
	f, err := os.Open(lf.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAccessLog(f, lf.unit)
}

// stats are one server's requests that started in the window.
type stats struct {
	count       int64
	durations   float64
	busySeconds float64 // time in service inside the window, all requests
}

func (s stats) meanDuration() float64 {
	if s.count == 0 {
		return 0
	}
	return s.durations / float64(s.count)
}

func inWindow(r request, start, end time.Time) bool {
	return !r.start.Before(start) && r.start.Before(end)
}

func serverStats(reqs []request, start, end time.Time) stats {
	var s stats
	for _, r := range reqs {
		if inWindow(r, start, end) {
			s.count++
			s.durations += r.duration
		}
		// Busy time counts every request's overlap with the window, also
		// one that began in the ramp-up and is still being served.
		from := r.start
		to := r.start.Add(time.Duration(r.duration * float64(time.Second)))
		if from.Before(start) {
			from = start
		}
		if to.After(end) {
			to = end
		}
		if to.After(from) {
			s.busySeconds += to.Sub(from).Seconds()
		}
	}
	return s
}

func keysOf(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func keysOfLogs(m map[string]logFile) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// sortedNames is for messages that list servers.
func sortedNames(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
