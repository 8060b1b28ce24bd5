package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
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
	// command names the command in resolve's refusal of a replica range in
	// --topology; ranges says the command answers for a range (recommend,
	// advise), as it does for a deployment file's replicas: 2..8.
	command string
	ranges  bool
}

const practitionersAllocation = "400-150-60"

func (f *deploymentFlags) register(fs *pflag.FlagSet) {
	f.registerChain(fs)
	fs.StringArrayVar(&f.allocs, "alloc", nil, "initial allocation: "+allocationHelp+" (default 400-150-60, or the deployment file's pools)")
}

// registerChain registers the deployment's flags without --alloc, for a
// command whose --alloc means something else (advise's current pools).
func (f *deploymentFlags) registerChain(fs *pflag.FlagSet) {
	fs.StringVarP(&f.topology, "topology", "t", "", topologyHelp)
	fs.StringVarP(&f.file, "deployment", "f", "", "deployment file (YAML) naming any chain of tiers")
}

const topologyHelp = "topology #W/#A/#C/#D or #W/#A/#D, e.g. 1/4/1/4; recommend and advise take one tier's replicas as a range min..max (1/2..8/1/2), as a deployment file's replicas: 2..8"

// resolve returns the deployment and the initial allocation.
func (f *deploymentFlags) resolve() (algorithms.Deployment, algorithms.Allocation, error) {
	var d algorithms.Deployment
	var a algorithms.Allocation
	switch {
	case f.topology != "" && f.file != "":
		return d, a, usagef("give --topology or --deployment, not both")
	case f.topology != "":
		var err error
		if d, err = topology.ParseTopologyRange(f.topology); err != nil {
			return d, a, usageError{err}
		}
		if topology.RangedTier(d) >= 0 && !f.ranges {
			// A deployment file's range is measured at its lower end by
			// every command; a range typed on the command line to one that
			// measures a single count is more likely a wrong command.
			cmd := f.command
			if cmd == "" {
				cmd = "this command"
			}
			return d, a, usagef("--topology %s: %s measures one replica count; give one, e.g. --topology %s (the range's lower end), or ask recommend or advise, which answer for the range",
				f.topology, cmd, d.Topology)
		}
		if a, err = topology.ParseAllocation(practitionersAllocation); err != nil {
			return d, a, err
		}
	case f.file != "":
		df, err := topology.LoadDeployment(f.file)
		if err != nil {
			return d, a, configError(err)
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
		return d, a, f.inFile(err)
	}
	return d, a, nil
}

func (f *deploymentFlags) parseAllocation(d algorithms.Deployment, s string) (algorithms.Allocation, error) {
	// Either form: the notation, or tier.pool=N items for any deployment.
	a, err := topology.ParseAllocationIn(d, s)
	if err != nil {
		return a, f.inFile(err)
	}
	return a, nil
}

// allocationHelp is the forms an allocation flag takes.
const allocationHelp = "#W_T-#A_T-#A_C (e.g. 400-150-60) or, for any deployment, tier.pool=N,... (e.g. web.threads=150,php.children=20,db.connections=51)"

// inFile names the deployment file in an allocation's error: the deployment
// inside it is known by its name field, which need not be the file's.
func (f *deploymentFlags) inFile(err error) error {
	if f.file == "" {
		return usageError{err}
	}
	return usagef("deployment file %q: %w", f.file, err)
}

// checkRunnable refuses, before the first experiment, a deployment and
// allocation the runner can tell it cannot run (the simulator's rules on
// tiers and pools; other runners take what the deployment lists). alloc is
// the --alloc value the allocation came from, empty when none was given.
// sizing names the command when it sizes pools from every tier's throughput
// and response time (recommend), which the runner must then read.
func (f *deploymentFlags) checkRunnable(r runner.Runner, d algorithms.Deployment, a algorithms.Allocation, t algorithms.Timing, alloc, sizing string) error {
	// One user: what is checked is the chain and its pools, not a workload.
	e := algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: 1}, Timing: t}
	err := r.Check(e)
	if err == nil && sizing != "" {
		err = r.CheckSizing(e, sizing)
	}
	if err == nil {
		return nil
	}
	what, from := fmt.Sprintf("topology %s", f.topology), "the default "+practitionersAllocation
	if f.file != "" {
		what, from = fmt.Sprintf("deployment file %q", f.file), "the file's pools"
	}
	if alloc != "" {
		from = "--alloc " + alloc
	}
	return usagef("%s (allocation: %s) cannot run on the %s runner: %w", what, from, r.Name, err)
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
	// precision is --precision; fixed is --fixed (precision 0).
	precision precisionValue
	fixed     bool
	// The exec runner's.
	command  string
	retries  int
	timeout  time.Duration
	protocol int
}

func (f *runnerFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.name, "runner", "sim", "where experiments run: "+strings.Join(runner.Names(), ", "))
	fs.StringVar(&f.campaign, "campaign", "", "recorded campaign for --runner replay (JSON Lines)")
	fs.StringVar(&f.model, "model", "", "simulator parameter file (default: the embedded RUBBoS testbed)")
	fs.Uint64Var(&f.seed, "seed", 1, "simulator seed: the same seed gives the same numbers")
	fs.DurationVar(&f.rampUp, "ramp-up", 0, "trial ramp-up (default: the runner's; the paper used 8m)")
	fs.DurationVar(&f.runtime, "runtime", 0, "trial runtime, the measured window (default: the runner's; the paper used 12m)")
	fs.DurationVar(&f.rampDown, "ramp-down", 0, "trial ramp-down (default: the runner's; the paper used 30s)")
	f.precision = precisionValue(algorithms.DefaultPrecision)
	fs.Var(&f.precision, "precision", "adaptive trials: each ends when the 95% confidence interval of every figure is within this share of its mean (2% or 0.02); --ramp-up is then the least warm-up and --runtime the longest window (0: fixed trials)")
	fs.BoolVar(&f.fixed, "fixed", false, "fixed trials of --ramp-up and --runtime, as the paper ran them (the same as --precision 0)")
	fs.StringVar(&f.command, "runner-cmd", "", "program the exec runner starts per experiment (split on spaces into argv; no shell)")
	fs.IntVar(&f.retries, "runner-retries", 2, "exec runner: retries of a failing trial, with backoff")
	fs.DurationVar(&f.timeout, "runner-timeout", 0, "exec runner: per-experiment timeout (default: the trial's length plus a margin)")
	fs.IntVar(&f.protocol, "runner-protocol", 1, "exec runner: the protocol version the program speaks (docs/exec-protocol.md): 1, or 2 for a program that also runs a ramp (--ramp)")
}

// build makes the runner. A deployment file's runner section names the
// runner and its settings; flags given on the command line win.
func (f *runnerFlags) build(cmd *cobra.Command, fac *factory, df *deploymentFlags) (runner.Runner, algorithms.Timing, error) {
	cfg := runner.Config{Name: f.name, Seed: f.seed, ModelPath: f.model, Campaign: f.campaign,
		Command: strings.Fields(f.command), Retries: f.retries, Timeout: f.timeout, Protocol: f.protocol, Log: cmd.ErrOrStderr()}
	if df != nil && df.loaded != nil {
		cfg.DeploymentFile, cfg.DeploymentPath = df.loaded, df.file
		// A section key gives way to its flag: --runner, --runner-cmd, ...
		flagOf := map[string]string{"name": "runner", "command": "runner-cmd", "retries": "runner-retries", "timeout": "runner-timeout", "protocol": "runner-protocol"}
		if err := cfg.ApplySection(df.loaded.Runner, df.file, func(key string) bool { return cmd.Flags().Changed(flagOf[key]) }); err != nil {
			return runner.Runner{}, algorithms.Timing{}, usageError{err}
		}
	}
	r, err := fac.NewRunner(cfg)
	if err != nil {
		// New reads settings and files and runs nothing: the configuration is wrong.
		return r, algorithms.Timing{}, configError(err)
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
	switch {
	case f.fixed && fl.Changed("precision") && f.precision > 0:
		return r, t, usagef("--fixed and --precision %v: give one (--fixed is --precision 0)", f.precision)
	case f.fixed:
		t.Precision = 0
	case fl.Changed("precision"):
		t.Precision = float64(f.precision)
	}
	if t.Precision > 0 && !fl.Changed("ramp-up") && r.AdaptiveRampUp > 0 {
		// An adaptive trial finds the end of its transient in the data:
		// its ramp-up is only the least warm-up.
		t.RampUp = r.AdaptiveRampUp
	}
	switch {
	case t.Runtime <= 0:
		return r, t, usagef("--runtime: want a duration > 0, got %v", t.Runtime)
	case t.RampUp < 0:
		return r, t, usagef("--ramp-up: want a duration >= 0, got %v", t.RampUp)
	case t.RampDown < 0:
		return r, t, usagef("--ramp-down: want a duration >= 0, got %v", t.RampDown)
	}
	for _, p := range []struct {
		flag string
		d    time.Duration
	}{{"--ramp-up", t.RampUp}, {"--runtime", t.Runtime}, {"--ramp-down", t.RampDown}} {
		if p.d > maxTrialPhase {
			return r, t, usagef("%s %v: want at most %v for one phase of a trial", p.flag, p.d, maxTrialPhase)
		}
	}
	if f.timeout > maxTrialPhase*3 {
		return r, t, usagef("--runner-timeout %v: want at most %v", f.timeout, maxTrialPhase*3)
	}
	switch {
	case r.Name == "sim":
		if err := checkSimRuntime(t.Runtime); err != nil {
			return r, t, err
		}
	}
	return r, t, nil
}

// precisionValue is --precision: a share, written 2% or 0.02.
type precisionValue float64

func (p *precisionValue) String() string { return strconv.FormatFloat(float64(*p), 'g', -1, 64) }
func (p *precisionValue) Type() string   { return "precision" }

func (p *precisionValue) Set(s string) error {
	v, err := parseShare(s)
	if err != nil || !(v >= 0 && v <= maxPrecision) {
		return fmt.Errorf("want a share in [0, %g] such as 2%% or 0.02 (0: fixed trials), got %q", maxPrecision, s)
	}
	*p = precisionValue(v)
	return nil
}

// maxPrecision bounds --precision: a half-width of half the mean says
// almost nothing, and 20 batches reach it at once.
const maxPrecision = 0.5

// parseShare reads "2%" or "0.02".
func parseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v / 100, err
	}
	return strconv.ParseFloat(s, 64)
}

// maxTrialPhase bounds a trial's ramp-up, runtime and ramp-down: past it a
// value is a typo (2500000h overflowed the exec runner's timeout).
const maxTrialPhase = 24 * time.Hour

// maxUsers bounds a workload: ten million emulated users took the
// simulator 10 minutes and 1.5 GB for one trial; no deployment this tool
// sizes needs a tenth of that from one campaign.
const maxUsers = 1_000_000

// minSimRuntime is the shortest measured window the simulator is given. Its
// users think 7 s between pages, so a window under a second holds a few
// pages per thousand users (1ns: none, and every figure is 0), and less
// than two of the JVM's 0.5 s GC work intervals: the numbers would be noise.
const minSimRuntime = time.Second

func checkSimRuntime(d time.Duration) error {
	if d < minSimRuntime {
		return usagef("--runtime: want at least %v on the simulator (shorter windows measure too few pages), got %v", minSimRuntime, d)
	}
	return nil
}

// registerParallel and checkParallel are every command's --parallel.
func registerParallel(fs *pflag.FlagSet, p *int, usage string) {
	fs.IntVar(p, "parallel", defaultParallel(), usage)
}

func checkParallel(n int) error {
	if n < 1 {
		return usagef("--parallel: want at least 1 trial at once, got %d", n)
	}
	return nil
}

// maxRefinements bounds --refinements: each refinement is a trial with
// about four times the last one's window, so the sixth of a 2% trial asks
// for 0.03%, which no window reaches.
const maxRefinements = 6

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
	refinements   int
	// derive names the steps the campaign derives from the deployment
	// (set by the campaign's setup, before options).
	derive algorithms.StepsToDerive
}

// algorithmScope says which procedures a command runs, and so which of
// Algorithm 1's flags it offers: a flag a command would ignore is not there.
type algorithmScope int

const (
	// scopeSweep is check's: the workload raised on one allocation.
	scopeSweep algorithmScope = iota
	// scopeFindCritical adds the doubling of saturated pools.
	scopeFindCritical
	// scopeRecommend is all of Algorithm 1.
	scopeRecommend
)

func (f *algorithmFlags) register(fs *pflag.FlagSet, scope algorithmScope) {
	d := algorithms.DefaultOptions()
	// Every field starts at its default: options() reads them all.
	f.mode, f.minJobsAt, f.step, f.smallStep, f.maxWorkload, f.scanSpan = string(d.Mode), string(d.MinJobsAt), d.Step, d.SmallStep, d.MaxWorkload, d.ScanSpan
	f.hwThreshold, f.softThreshold, f.sla, f.kneeFactor, f.demandDrift = d.HardwareThreshold, d.SoftThreshold, 2*time.Second, d.KneeFactor, d.DemandDrift
	f.refinements = d.Refinements
	stepUse := "workload step of the sweep, users"
	if scope >= scopeFindCritical {
		stepUse = "find-critical workload step, users (on the exec and live runners, unless given: 1/11 of the saturation workload a first low-load trial predicts)"
		fs.StringVar(&f.mode, "mode", string(d.Mode), "efficient (fewer experiments, same answer) or paper (Algorithm 1 as written)")
		fs.IntVar(&f.refinements, "refinements", d.Refinements, fmt.Sprintf(
			"adaptive trials: a saturation test whose interval holds the threshold is measured again at half the precision up to this many times, until one decides it or runs to --runtime (0: never; at most %d)", maxRefinements))
	}
	fs.IntVar(&f.step, "step", d.Step, stepUse)
	if scope == scopeFindCritical {
		// The staircase rises by the step; only a ramp rises by the small step.
		fs.IntVar(&f.smallStep, "small-step", d.SmallStep, "--ramp: the ramp's rise per level, users (on the exec and live runners, unless given: 1/5 of the step)")
	}
	fs.IntVar(&f.maxWorkload, "max-workload", d.MaxWorkload, "no scan goes above this many users")
	fs.Float64Var(&f.hwThreshold, "hw-threshold", d.HardwareThreshold, "a hardware resource at or above this utilisation is saturated")
	fs.Float64Var(&f.softThreshold, "soft-threshold", d.SoftThreshold, "a pool fully busy for at least this share of the runtime is saturated")
	fs.Var((*seconds)(&f.sla), "sla", "SLA response-time threshold of goodput: 2, 2s or 500ms")
	if scope < scopeRecommend {
		return
	}
	fs.StringVar(&f.minJobsAt, "minjobs-at", string(d.MinJobsAt), "where minJobs is read: knee (of SLO satisfaction) or saturation (critical utilisation crosses --hw-threshold)")
	fs.IntVar(&f.smallStep, "small-step", d.SmallStep, "knee scan workload step, and with --ramp the ramp's rise per level, users (on the exec and live runners, unless given: 1/5 of the step)")
	fs.IntVar(&f.scanSpan, "scan-span", d.ScanSpan, "efficient mode: the knee scan starts this many users below the saturation workload (on the exec and live runners, unless given: 3 steps)")
	fs.Var((*seconds)(&f.kneeThreshold), "knee-threshold", "response time at which SLO satisfaction is measured for the knee (default: --knee-factor x the page response time at the scan's lowest workload; the SLA in paper mode)")
	fs.Float64Var(&f.kneeFactor, "knee-factor", d.KneeFactor, "see --knee-threshold")
	fs.Float64Var(&f.demandDrift, "demand-drift", d.DemandDrift, "the saturation reading trusts the utilisation law: if the critical server's CPU per request falls by more than this share between low load and saturation, or throughput past the reading grows beyond what the saturated CPU could serve (checked with a trial a quarter further when it fell 5% or more), minJobs is read where throughput stops growing instead, the peak of a small-step scan (0: neither check)")
}

// seconds is a duration flag that also takes plain seconds: --sla 2 and
// --sla 2s mean the same everywhere.
type seconds time.Duration

func (s *seconds) String() string {
	if time.Duration(*s) == 0 {
		return "0s"
	}
	return time.Duration(*s).String()
}

func (s *seconds) Set(v string) error {
	d, err := parseSeconds(v)
	if err != nil {
		return err
	}
	*s = seconds(d)
	return nil
}

func (s *seconds) Type() string { return "seconds" }

// parseSeconds reads "2", "0.5", "2s" or "500ms".
func parseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e6 {
		return 0, fmt.Errorf("want seconds such as 2, 0.5 or 500ms")
	}
	return time.Duration(x * float64(time.Second)), nil
}

func (f *algorithmFlags) options(t algorithms.Timing) (algorithms.Options, error) {
	o := algorithms.DefaultOptions()
	o.Mode = algorithms.Mode(f.mode)
	o.MinJobsAt = algorithms.MinJobsReading(f.minJobsAt)
	o.Step, o.SmallStep, o.MaxWorkload, o.ScanSpan = f.step, f.smallStep, f.maxWorkload, f.scanSpan
	o.DeriveSteps = f.derive
	o.HardwareThreshold, o.SoftThreshold = f.hwThreshold, f.softThreshold
	o.SLA, o.KneeThreshold, o.KneeFactor = f.sla.Seconds(), f.kneeThreshold.Seconds(), f.kneeFactor
	o.DemandDrift = f.demandDrift
	if f.demandDrift == 0 {
		o.DemandDrift = -1 // 0 on the command line: no check
	}
	o.Refinements = f.refinements
	if f.refinements == 0 {
		o.Refinements = -1 // 0 on the command line: never
	}
	o.Timing = t
	if t.Adaptive() {
		// Goodput at the SLA is one of the figures an adaptive trial
		// measures to its precision.
		o.Timing.SLAs = []float64{o.SLA}
	}
	switch {
	case o.Mode != algorithms.ModeEfficient && o.Mode != algorithms.ModePaper:
		return o, usagef("--mode %q: want efficient or paper", f.mode)
	case o.MinJobsAt != algorithms.ReadAtKnee && o.MinJobsAt != algorithms.ReadAtSaturation:
		return o, usagef("--minjobs-at %q: want knee or saturation", f.minJobsAt)
	case o.Step < 1:
		return o, usagef("--step: want a positive number of users, got %d", o.Step)
	case o.SmallStep < 1:
		return o, usagef("--small-step: want a positive number of users, got %d", o.SmallStep)
	case o.MaxWorkload < 1 || o.MaxWorkload > maxUsers:
		return o, usagef("--max-workload: want a number of users in 1..%d, got %d", maxUsers, o.MaxWorkload)
	case o.Step > o.MaxWorkload && !f.derive.Step:
		return o, usagef("--step %d: want at most --max-workload (%d users)", o.Step, o.MaxWorkload)
	case o.SmallStep > o.MaxWorkload && !f.derive.SmallStep:
		return o, usagef("--small-step %d: want at most --max-workload (%d users)", o.SmallStep, o.MaxWorkload)
	case o.ScanSpan < 1:
		return o, usagef("--scan-span: want a positive number of users, got %d", o.ScanSpan)
	case !(o.HardwareThreshold > 0 && o.HardwareThreshold <= 1):
		return o, usagef("--hw-threshold %g: want a utilisation in (0,1]", o.HardwareThreshold)
	case !(o.SoftThreshold > 0 && o.SoftThreshold <= 1):
		return o, usagef("--soft-threshold %g: want a share in (0,1]", o.SoftThreshold)
	case f.sla <= 0:
		return o, usagef("--sla: want a duration > 0, got %v", f.sla)
	case f.kneeThreshold < 0:
		return o, usagef("--knee-threshold: want a duration >= 0, got %v", f.kneeThreshold)
	case !(o.KneeFactor > 0):
		return o, usagef("--knee-factor: want a number > 0, got %g", o.KneeFactor)
	case f.demandDrift < 0 || f.demandDrift >= 1:
		return o, usagef("--demand-drift %g: want a share in [0,1)", f.demandDrift)
	case f.refinements < 0 || f.refinements > maxRefinements:
		return o, usagef("--refinements %d: want a number of trials in 0..%d", f.refinements, maxRefinements)
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

// deprecatedAlias keeps an old flag name working for a renamed flag (one
// name, one meaning across commands), hidden from help; noteDeprecated
// tells the user on stderr (pflag's own notice goes to stdout, into the
// JSON a script reads).
func deprecatedAlias[T string | time.Duration](fs *pflag.FlagSet, old, now string, p *T) {
	switch v := any(p).(type) {
	case *string:
		fs.StringVar(v, old, "", "")
	case *time.Duration:
		fs.DurationVar(v, old, 0, "")
	}
	_ = fs.MarkHidden(old)
	_ = fs.SetAnnotation(old, renamedTo, []string{now})
}

// renamedTo annotates an old flag name with the new one.
const renamedTo = "softalloc-renamed-to"

// noteDeprecated says, for each old flag name the command line used, what
// it is called now.
func noteDeprecated(fs *pflag.FlagSet, w io.Writer) {
	fs.Visit(func(f *pflag.Flag) {
		if now, ok := f.Annotations[renamedTo]; ok {
			fmt.Fprintf(w, "softalloc: warning: --%s is now --%s; the old name will go\n", f.Name, now[0])
		}
	})
}

// refuseRepeats refuses a list flag that names one item twice: a repeat
// means nothing, and some meant something wrong (validate --seeds 1,1
// averaged one run twice and narrowed its interval by the square root of
// two). label is the flag as the error starts (--seeds "1,1"), noun what an
// item is, texts the items as given and key(i) what the i-th means, so that
// 2 and 2s are one SLA.
func refuseRepeats[K comparable](label, noun string, texts []string, key func(i int) K) error {
	first := make(map[K]int, len(texts))
	for i, t := range texts {
		k := key(i)
		j, seen := first[k]
		switch {
		case !seen:
			first[k] = i
		case texts[j] == t:
			return usagef("%s: %s %s is given twice; want each %s once", label, noun, t, noun)
		default:
			return usagef("%s: %s %s is %s %s again; want each %s once", label, noun, t, noun, texts[j], noun)
		}
	}
	return nil
}

// splitUnique splits a comma-separated list of names (empty items dropped)
// and refuses a name given twice.
func splitUnique(flag, noun, s string) ([]string, error) {
	names := splitList(s)
	return names, refuseRepeats(fmt.Sprintf("%s %q", flag, s), noun, names, func(i int) string { return names[i] })
}

// mebibytesValue is a memory size flag, kept in MiB: a number with a unit
// (48MiB, 43008KiB, 1.5GiB, 512B; K, M, G and KB, MB, GB are the same
// binary units, as php-fpm's and ps's figures are), or a bare number of MiB,
// as validate's --memory-limit and --child-rss took first.
type mebibytesValue float64

func (v *mebibytesValue) String() string {
	if *v == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(*v), 'g', -1, 64) + "MiB"
}

func (v *mebibytesValue) Type() string { return "size" }

func (v *mebibytesValue) Set(s string) error {
	n, err := parseMebibytes(s)
	if err != nil {
		return err
	}
	*v = mebibytesValue(n)
	return nil
}

// maxMebibytes bounds a memory size (1 PiB): past it a value is a typo.
const maxMebibytes = 1 << 30

// parseMebibytes reads a memory size for mebibytesValue, in MiB.
func parseMebibytes(s string) (float64, error) {
	t, scale := cutMemoryUnit(strings.TrimSpace(s))
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || !(n > 0) || n*scale > maxMebibytes || strings.ContainsAny(t, "xXpP") {
		return 0, fmt.Errorf("want a memory size above 0 and at most 1PiB, such as 48MiB, 43008KiB or 1.5GiB (a bare number is MiB), got %q", s)
	}
	return n * scale, nil
}

// cutMemoryUnit splits off a size's unit: the number and MiB per unit.
func cutMemoryUnit(s string) (string, float64) {
	for _, u := range []struct {
		suffixes []string
		mib      float64
	}{
		{[]string{"KiB", "KB", "K", "k"}, 1.0 / 1024},
		{[]string{"MiB", "MB", "M"}, 1},
		{[]string{"GiB", "GB", "G"}, 1024},
		{[]string{"B"}, 1.0 / (1 << 20)},
	} {
		for _, suf := range u.suffixes {
			if rest, ok := strings.CutSuffix(s, suf); ok {
				return strings.TrimSpace(rest), u.mib
			}
		}
	}
	return s, 1 // a bare number is MiB
}
