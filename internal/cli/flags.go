package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner"
	"github.com/softalloc/softalloc/internal/topology"
)

// deploymentFlags name the hardware and the starting allocation.
type deploymentFlags struct {
	topology string
	file     string
	allocs   []string // several only where a command compares allocations
	// loaded is the deployment file once resolve has read it.
	loaded *topology.DeploymentFile
}

const practitionersAllocation = "400-150-60"

func (f *deploymentFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&f.topology, "topology", "t", "", "topology #W/#A/#C/#D or #W/#A/#D, e.g. 1/4/1/4")
	fs.StringVarP(&f.file, "deployment", "f", "", "deployment file (YAML) naming any chain of tiers")
	fs.StringArrayVar(&f.allocs, "alloc", nil, "initial allocation #W_T-#A_T-#A_C (default 400-150-60, or the deployment file's pools)")
}

// resolve returns the deployment and the initial allocation.
func (f *deploymentFlags) resolve() (algorithms.Deployment, algorithms.Allocation, error) {
	var d algorithms.Deployment
	var a algorithms.Allocation
	switch {
	case f.topology != "" && f.file != "":
		return d, a, usagef("give --topology or --deployment, not both")
	case f.topology != "":
		var err error
		if d, err = topology.ParseTopology(f.topology); err != nil {
			return d, a, usageError{err}
		}
		if a, err = topology.ParseAllocation(practitionersAllocation); err != nil {
			return d, a, err
		}
	case f.file != "":
		df, err := topology.LoadDeployment(f.file)
		if err != nil {
			return d, a, err
		}
		d, a = df.Deployment, df.Allocation
		f.loaded = &df
	default:
		return d, a, usagef("want --topology (e.g. --topology 1/4/1/4) or --deployment FILE")
	}
	if len(f.allocs) > 1 {
		return d, a, usagef("--alloc given %d times: this command takes one allocation", len(f.allocs))
	}
	if len(f.allocs) == 1 {
		var err error
		if a, err = f.parseAllocation(d, f.allocs[0]); err != nil {
			return d, a, err
		}
	}
	if err := topology.ValidateAllocation(d, a); err != nil {
		return d, a, usageError{err}
	}
	return d, a, nil
}

func (f *deploymentFlags) parseAllocation(d algorithms.Deployment, s string) (algorithms.Allocation, error) {
	a, err := topology.ParseAllocation(s)
	if err != nil {
		return a, usageError{err}
	}
	if err := topology.ValidateAllocation(d, a); err != nil {
		return a, usageError{err}
	}
	return a, nil
}

// runnerFlags choose the runner and the trial timing.
type runnerFlags struct {
	name     string
	campaign string
	model    string
	seed     uint64
	rampUp   time.Duration
	runtime  time.Duration
	rampDown time.Duration
	// The exec runner's.
	command string
	retries int
	timeout time.Duration
}

func (f *runnerFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.name, "runner", "sim", "where experiments run: "+strings.Join(runner.Names(), ", "))
	fs.StringVar(&f.campaign, "campaign", "", "recorded campaign for --runner replay (JSON Lines)")
	fs.StringVar(&f.model, "model", "", "simulator parameter file (default: the embedded RUBBoS testbed)")
	fs.Uint64Var(&f.seed, "seed", 1, "simulator seed: the same seed gives the same numbers")
	fs.DurationVar(&f.rampUp, "ramp-up", 0, "trial ramp-up (default: the runner's; the paper used 8m)")
	fs.DurationVar(&f.runtime, "runtime", 0, "trial runtime, the measured window (default: the runner's; the paper used 12m)")
	fs.DurationVar(&f.rampDown, "ramp-down", 0, "trial ramp-down (default: the runner's; the paper used 30s)")
	fs.StringVar(&f.command, "runner-cmd", "", "program the exec runner starts per experiment (split on spaces into argv; no shell)")
	fs.IntVar(&f.retries, "runner-retries", 2, "exec runner: retries of a failing trial, with backoff")
	fs.DurationVar(&f.timeout, "runner-timeout", 0, "exec runner: per-experiment timeout (default: the trial's length plus a margin)")
}

// build makes the runner. A deployment file's runner section names the
// runner and its settings; flags given on the command line win.
func (f *runnerFlags) build(cmd *cobra.Command, df *deploymentFlags) (runner.Runner, algorithms.Timing, error) {
	cfg := runner.Config{Name: f.name, Seed: f.seed, ModelPath: f.model, Campaign: f.campaign,
		Command: strings.Fields(f.command), Retries: f.retries, Timeout: f.timeout, Log: cmd.ErrOrStderr()}
	if df != nil && df.loaded != nil {
		cfg.DeploymentFile, cfg.DeploymentPath = df.loaded, df.file
		if err := fromRunnerSection(cmd, &cfg, df.loaded.Runner, df.file); err != nil {
			return runner.Runner{}, algorithms.Timing{}, err
		}
	}
	r, err := runner.New(cfg)
	if err != nil {
		return r, algorithms.Timing{}, err
	}
	t := r.DefaultTiming
	fl := cmd.Flags()
	if fl.Changed("ramp-up") {
		t.RampUp = f.rampUp
	}
	if fl.Changed("runtime") {
		t.Runtime = f.runtime
	}
	if fl.Changed("ramp-down") {
		t.RampDown = f.rampDown
	}
	if t.RampUp < 0 || t.Runtime <= 0 || t.RampDown < 0 {
		return r, t, usagef("timing: want --runtime > 0 and --ramp-up, --ramp-down >= 0, got %v, %v, %v", t.Runtime, t.RampUp, t.RampDown)
	}
	return r, t, nil
}

// algorithmFlags tune Algorithm 1.
type algorithmFlags struct {
	mode          string
	minJobsAt     string
	step          int
	smallStep     int
	maxWorkload   int
	scanSpan      int
	hwThreshold   float64
	softThreshold float64
	sla           time.Duration
	kneeThreshold time.Duration
	kneeFactor    float64
	demandDrift   float64
}

func (f *algorithmFlags) register(fs *pflag.FlagSet) {
	d := algorithms.DefaultOptions()
	fs.StringVar(&f.mode, "mode", string(d.Mode), "efficient (fewer experiments, same answer) or paper (Algorithm 1 as written)")
	fs.StringVar(&f.minJobsAt, "minjobs-at", string(d.MinJobsAt), "where minJobs is read: knee (of SLO satisfaction) or saturation (critical utilisation crosses --hw-threshold)")
	fs.IntVar(&f.step, "step", d.Step, "find-critical workload step, users")
	fs.IntVar(&f.smallStep, "small-step", d.SmallStep, "knee scan workload step, users")
	fs.IntVar(&f.maxWorkload, "max-workload", d.MaxWorkload, "no scan goes above this many users")
	fs.IntVar(&f.scanSpan, "scan-span", d.ScanSpan, "efficient mode: the knee scan starts this many users below the saturation workload")
	fs.Float64Var(&f.hwThreshold, "hw-threshold", d.HardwareThreshold, "a hardware resource at or above this utilisation is saturated")
	fs.Float64Var(&f.softThreshold, "soft-threshold", d.SoftThreshold, "a pool fully busy for at least this share of the runtime is saturated")
	fs.DurationVar(&f.sla, "sla", 2*time.Second, "SLA response-time threshold of goodput")
	fs.DurationVar(&f.kneeThreshold, "knee-threshold", 0, "response time at which SLO satisfaction is measured for the knee (default: --knee-factor x the page response time at the scan's lowest workload; the SLA in paper mode)")
	fs.Float64Var(&f.kneeFactor, "knee-factor", d.KneeFactor, "see --knee-threshold")
	fs.Float64Var(&f.demandDrift, "demand-drift", d.DemandDrift, "the saturation reading trusts the utilisation law: if the critical server's CPU per request falls by more than this share between low load and saturation, minJobs is read at the knee instead (0: no check)")
}

func (f *algorithmFlags) options(t algorithms.Timing) (algorithms.Options, error) {
	o := algorithms.DefaultOptions()
	o.Mode = algorithms.Mode(f.mode)
	o.MinJobsAt = algorithms.MinJobsReading(f.minJobsAt)
	o.Step, o.SmallStep, o.MaxWorkload, o.ScanSpan = f.step, f.smallStep, f.maxWorkload, f.scanSpan
	o.HardwareThreshold, o.SoftThreshold = f.hwThreshold, f.softThreshold
	o.SLA, o.KneeThreshold, o.KneeFactor = f.sla.Seconds(), f.kneeThreshold.Seconds(), f.kneeFactor
	o.DemandDrift = f.demandDrift
	if f.demandDrift == 0 {
		o.DemandDrift = -1 // 0 on the command line: no check
	}
	o.Timing = t
	switch {
	case o.Mode != algorithms.ModeEfficient && o.Mode != algorithms.ModePaper:
		return o, usagef("--mode %q: want efficient or paper", f.mode)
	case o.MinJobsAt != algorithms.ReadAtKnee && o.MinJobsAt != algorithms.ReadAtSaturation:
		return o, usagef("--minjobs-at %q: want knee or saturation", f.minJobsAt)
	case o.Step < 1 || o.SmallStep < 1 || o.MaxWorkload < 1 || o.ScanSpan < 1:
		return o, usagef("--step, --small-step, --max-workload and --scan-span: want positive numbers of users")
	case !(o.HardwareThreshold > 0 && o.HardwareThreshold <= 1):
		return o, usagef("--hw-threshold %g: want a utilisation in (0,1]", o.HardwareThreshold)
	case !(o.SoftThreshold > 0 && o.SoftThreshold <= 1):
		return o, usagef("--soft-threshold %g: want a share in (0,1]", o.SoftThreshold)
	case o.SLA <= 0 || o.KneeThreshold < 0 || o.KneeFactor <= 0:
		return o, usagef("--sla must be > 0, --knee-threshold >= 0 and --knee-factor > 0")
	case f.demandDrift < 0 || f.demandDrift >= 1:
		return o, usagef("--demand-drift %g: want a share in [0,1)", f.demandDrift)
	}
	return o, nil
}

func parseTopologyArg(s string) (algorithms.Deployment, error) {
	d, err := topology.ParseTopology(s)
	if err != nil {
		return d, usageError{err}
	}
	return d, nil
}

func formatAllocation(a algorithms.Allocation) string {
	if s, err := topology.FormatAllocation(a); err == nil {
		return s
	}
	return a.Key()
}

// fromRunnerSection applies a deployment file's runner section (name,
// command, retries, timeout) where the matching flag was not given.
func fromRunnerSection(cmd *cobra.Command, cfg *runner.Config, sec map[string]any, file string) error {
	if sec == nil {
		return nil
	}
	fl := cmd.Flags()
	bad := func(key, want string, got any) error {
		return usagef("deployment %q: runner.%s: want %s, got %v", file, key, want, got)
	}
	if v, ok := sec["name"]; ok && !fl.Changed("runner") {
		name, isStr := v.(string)
		if !isStr {
			return bad("name", "a runner name", v)
		}
		cfg.Name = name
	}
	if v, ok := sec["command"]; ok && !fl.Changed("runner-cmd") {
		switch c := v.(type) {
		case string:
			cfg.Command = strings.Fields(c)
		case []any:
			cfg.Command = nil
			for _, a := range c {
				s, isStr := a.(string)
				if !isStr {
					return bad("command", "a list of strings (argv)", v)
				}
				cfg.Command = append(cfg.Command, s)
			}
		default:
			return bad("command", "a list of strings (argv)", v)
		}
	}
	if v, ok := sec["retries"]; ok && !fl.Changed("runner-retries") {
		n, isInt := v.(int)
		if !isInt || n < 0 {
			return bad("retries", "an integer >= 0", v)
		}
		cfg.Retries = n
	}
	if v, ok := sec["timeout"]; ok && !fl.Changed("runner-timeout") {
		s, isStr := v.(string)
		d, err := time.ParseDuration(s)
		if !isStr || err != nil || d <= 0 {
			return bad("timeout", "a duration such as 25m", v)
		}
		cfg.Timeout = d
	}
	return nil
}
