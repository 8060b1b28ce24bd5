package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/safefile"
)

// config is softalloc-locust's settings file (locust.example.yaml).
type config struct {
	// Deployment is the deployment file whose runner section (the live
	// runner's: target, workload, hook, health, prometheus, tiers) says what
	// to load and how to observe the servers. Relative to the settings file.
	Deployment string `yaml:"deployment"`
	// Locust is the locust executable of the master and of local workers.
	Locust string `yaml:"locust"`
	// Workers lists the worker processes, one entry each: "local" runs one
	// on this machine, anything else is a host reached through Remote.
	Workers []string `yaml:"workers"`
	// Remote is the argv that runs one worker on a host, with {host},
	// {index}, {worker}, {locust}, {masterHost} and {masterPort}
	// substituted; an element "{workerArgs}" becomes Locust's worker
	// arguments. It must run as long as the worker does (ssh does).
	Remote []string `yaml:"remote"`
	// Local is the argv of a local worker (default: {locust} {workerArgs}).
	Local []string `yaml:"local"`
	// MasterHost is the address workers reach the master at; MasterBind the
	// address the master listens on (default: 127.0.0.1 when every worker is
	// local, else every address); MasterPort its port (0: a free one).
	MasterHost string `yaml:"masterHost"`
	MasterBind string `yaml:"masterBind"`
	MasterPort int    `yaml:"masterPort"`
	// ConnectTimeout bounds the master's wait for every worker (default
	// 30s); ReplyTimeout its wait for their statistics after the window,
	// if longer than the ramp-down (default 10s).
	ConnectTimeout duration.Seconds `yaml:"connectTimeout"`
	ReplyTimeout   duration.Seconds `yaml:"replyTimeout"`
	// Results is where each attempt's files go, results/<experimentId>/attempt-<n>
	// (default: results, relative to the settings file).
	Results string `yaml:"results"`

	dir string
}

const (
	defaultRemote = "ssh -o BatchMode=yes {host} locust {workerArgs}"
	localWorker   = "local"
	// maxWorkersPerHost bounds a remote host's entries in workers (local
	// ones are bounded by this machine's cores): a worker uses at most one
	// core, and 64 workers hold about 320,000 RUBBoS users (README).
	maxWorkersPerHost = 64
)

var (
	// A host goes into an argv, and through ssh into a remote shell: only
	// the characters of host names, addresses and user@host.
	hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]*$`)
	tmplVar  = regexp.MustCompile(`\{[A-Za-z]+\}`)
	argVars  = map[string]bool{"{host}": true, "{index}": true, "{worker}": true, "{locust}": true, "{masterHost}": true, "{masterPort}": true}
)

// loadConfig reads and checks the settings file at path.
func loadConfig(path string) (config, error) {
	var c config
	b, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return c, err
	}
	if err := oneline.DecodeYAML(b, &c); err != nil {
		if errors.Is(err, io.EOF) {
			return c, fmt.Errorf("settings %q: the file is empty; want deployment, locust and workers (see examples/locust/locust.example.yaml)", path)
		}
		return c, fmt.Errorf("settings %q: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	if err := c.check(); err != nil {
		return c, fmt.Errorf("settings %q: %w", path, err)
	}
	return c, nil
}

func (c *config) check() error {
	if c.Deployment == "" {
		return errors.New("deployment: missing; want the deployment file whose runner section names the target, workload and Prometheus (testbed/deployment.yaml)")
	}
	if c.Locust == "" {
		c.Locust = "locust"
	}
	if len(c.Workers) == 0 {
		return errors.New("workers: want at least one entry: local, or a host reached through remote")
	}
	for i, w := range c.Workers {
		if !hostName.MatchString(w) {
			return fmt.Errorf("workers[%d]: want %q or a host name (letters, digits, . _ : @ -), got %q", i, localWorker, w)
		}
	}
	// Bounded per host, so that a long or generated list cannot start
	// thousands of processes on one machine.
	per := map[string]int{}
	var order []string
	for _, w := range c.Workers {
		if per[w] == 0 {
			order = append(order, w)
		}
		per[w]++
	}
	for _, w := range order {
		switch {
		case w == localWorker && per[w] > runtime.NumCPU():
			return fmt.Errorf("workers: %d entries %q, want at most %d, the cores of this machine (a worker uses at most one)", per[w], w, runtime.NumCPU())
		case w != localWorker && per[w] > maxWorkersPerHost:
			return fmt.Errorf("workers: %d entries %q, want at most %d per host", per[w], w, maxWorkersPerHost)
		}
	}
	if len(c.Remote) == 0 {
		c.Remote = strings.Fields(defaultRemote)
	}
	if len(c.Local) == 0 {
		c.Local = []string{"{locust}", "{workerArgs}"}
	}
	for _, t := range []struct {
		key  string
		argv []string
	}{{"remote", c.Remote}, {"local", c.Local}} {
		args := 0
		for _, a := range t.argv {
			if a == "{workerArgs}" {
				args++
				continue
			}
			for _, v := range tmplVar.FindAllString(a, -1) {
				if !argVars[v] {
					return fmt.Errorf("%s: unknown placeholder %s in %q; want {host}, {index}, {worker}, {locust}, {masterHost}, {masterPort} or an element {workerArgs}", t.key, v, a)
				}
			}
		}
		if args != 1 {
			return fmt.Errorf("%s: want exactly one element {workerArgs} (Locust's worker arguments), got %d in %q", t.key, args, strings.Join(t.argv, " "))
		}
	}
	if c.MasterHost == "" {
		c.MasterHost = "127.0.0.1"
	}
	if c.MasterBind == "" {
		c.MasterBind = "127.0.0.1"
		for _, w := range c.Workers {
			if w != localWorker {
				c.MasterBind = "*"
			}
		}
	}
	if c.MasterPort < 0 || c.MasterPort > 65535 {
		return fmt.Errorf("masterPort: want a port in [0,65535] (0: a free one), got %d", c.MasterPort)
	}
	for _, d := range []struct {
		key string
		v   *duration.Seconds
		def time.Duration
	}{{"connectTimeout", &c.ConnectTimeout, 30 * time.Second}, {"replyTimeout", &c.ReplyTimeout, 10 * time.Second}} {
		if *d.v == 0 {
			*d.v = duration.Of(d.def)
		}
		if !(*d.v >= 1 && *d.v <= duration.Of(time.Hour)) {
			return fmt.Errorf("%s: want a duration in [1s, 1h], got %gs", d.key, float64(*d.v))
		}
	}
	if c.Results == "" {
		c.Results = "results"
	}
	return nil
}

// path resolves a file name of the settings against the settings file's directory.
func (c config) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// worker is one worker process to start.
type worker struct {
	Index int    // 1-based
	Host  string // "local" or a host
	Name  string // "2@loadgen-2": in the master's messages and ours
	Argv  []string
}

// workers expands the command templates for a master at host:port.
func (c config) workers(locust, masterHost string, masterPort int) []worker {
	out := make([]worker, 0, len(c.Workers))
	for i, h := range c.Workers {
		w := worker{Index: i + 1, Host: h, Name: fmt.Sprintf("%d@%s", i+1, h)}
		vars := map[string]string{"{host}": h, "{index}": fmt.Sprint(i + 1), "{worker}": w.Name, "{locust}": locust,
			"{masterHost}": masterHost, "{masterPort}": fmt.Sprint(masterPort)}
		tmpl := c.Remote
		if h == localWorker {
			tmpl = c.Local
		}
		for _, a := range tmpl {
			if a == "{workerArgs}" {
				// -f -: the worker gets the locustfile from the master, so a
				// remote host needs Locust and nothing of the trial.
				w.Argv = append(w.Argv, "-f", "-", "--worker", "--master-host", masterHost, "--master-port", fmt.Sprint(masterPort),
					"--softalloc-worker", w.Name, "--loglevel", "INFO")
				continue
			}
			w.Argv = append(w.Argv, tmplVar.ReplaceAllStringFunc(a, func(v string) string { return vars[v] }))
		}
		out = append(out, w)
	}
	return out
}

// active are the workers a trial of users starts: at most one per user (a
// worker without users would only cost a process), the first of the list.
func (c config) active(users int) []string {
	return c.Workers[:max(1, min(users, len(c.Workers)))]
}
