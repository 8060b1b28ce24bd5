// Command softalloc-locust is a program for softalloc's exec runner
// (docs/exec-protocol.md) that runs each experiment as a distributed Locust
// test: a headless master on this machine and workers here or on other
// hosts, emulating the closed-loop users of the deployment's workload file.
//
//	softalloc find-critical -f testbed/deployment.yaml --runner exec \
//	    --runner-cmd "softalloc-locust locust.yaml"
//
// The settings file (locust.example.yaml) names the deployment file, whose
// runner section is the live runner's: the target, the workload, the hook
// that applies an allocation, the health URL, Prometheus and the tiers'
// queries. So the client's side of the observation comes from Locust's
// statistics of the measured window (locustfile.py), and the servers' side
// from Prometheus exactly as the live runner reads it.
//
// It speaks exec protocol versions 1 and 2 (run it with --runner-protocol 2
// or runner.protocol: 2): a version-2 ramp is one Locust run whose users
// rise level by level as softalloc's steps on stdin say, a window per level
// on stdout (runRamp).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/exec"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "softalloc-locust: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		return errors.New("usage: softalloc-locust SETTINGS.yaml < experiment.json (see examples/locust/README.md)")
	}
	c, err := loadConfig(args[0])
	if err != nil {
		return err
	}
	var req exec.Request
	// A ramp's steps follow the experiment on stdin: one decoder for all.
	dec := json.NewDecoder(stdin)
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("read experiment: %w", err)
	}
	if req.ProtocolVersion < exec.ProtocolVersion || req.ProtocolVersion > exec.RampProtocolVersion {
		return fmt.Errorf("protocol version %d: this program speaks %d and %d", req.ProtocolVersion, exec.ProtocolVersion, exec.RampProtocolVersion)
	}
	if req.Ramp && req.ProtocolVersion < exec.RampProtocolVersion {
		return fmt.Errorf("a ramp in protocol version %d: ramps are version %d", req.ProtocolVersion, exec.RampProtocolVersion)
	}
	e, err := experiment(req)
	if err != nil {
		return err
	}
	df, err := topology.LoadDeployment(c.path(c.Deployment))
	if err != nil {
		return err
	}
	if df.Runner == nil {
		return fmt.Errorf("deployment %q: no runner section; want the live runner's (target, workload, prometheus, tiers), as in testbed/deployment.yaml", c.path(c.Deployment))
	}
	lr, err := live.New(df.Runner, c.path(c.Deployment))
	if err != nil {
		return fmt.Errorf("deployment %q: %w", c.path(c.Deployment), err)
	}
	// The hook's output, the warm-up and the runner's notes: the exec
	// runner shows the program's stderr.
	lr.Log = stderr
	lc := lr.Config()
	if e.Workload.Users > lc.MaxUsers {
		return fmt.Errorf("%d users: want at most %d (the runner section's maxUsers)", e.Workload.Users, lc.MaxUsers)
	}
	dir := filepath.Join(c.path(c.Results), req.ExperimentID, fmt.Sprintf("attempt-%d", req.Attempt))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }

	if err := lr.Prepare(ctx, e.Allocation); err != nil {
		return err
	}
	// The section's warmUp, as a live trial runs it after an apply: a
	// reload may have emptied the caches Locust's first window would read.
	if err := lr.WarmUp(ctx, e); err != nil {
		return err
	}
	if req.Ramp {
		return ramp(ctx, c, lr, req, e, dec, dir, stdout, logf)
	}
	p, err := makePlan(lr.Workload(), lc.Target, lc.ThinkTime.Duration(), lc.RequestTimeout.Duration(),
		e.Workload.Users, len(c.active(e.Workload.Users)), e.Timing, c.ReplyTimeout.Duration())
	if err != nil {
		return err
	}
	w, err := runLocust(ctx, c, p, dir, logf)
	if err != nil {
		return err
	}
	obs, err := clientSide(w, *lc.MaxErrorShare, logf)
	if err != nil {
		return err
	}
	// The servers over the window Locust measured, on the master's clock.
	e.Timing.Runtime = time.Duration(w.Window.Seconds * float64(time.Second)).Round(time.Millisecond)
	if obs.Servers, err = lr.Servers(ctx, e, w.End()); err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	if err := obs.Validate(); err != nil {
		return fmt.Errorf("the observation: %w", err)
	}
	out, err := json.Marshal(exec.Response{ProtocolVersion: req.ProtocolVersion, Observation: wire.FromObservation(obs)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "observation.json"), append(out, '\n'), 0o644); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

// ramp runs a ramp (protocol version 2) in one Locust run: after each
// level's window it prints the window's observation, with its "ramp" field,
// and reads the next step; a step of 0 users (or the end of stdin:
// softalloc is gone) ends the run. Each window is measured for the
// experiment's runtimeSeconds, at least its rampUpSeconds after the step
// (once every user runs); a step's precision is not used, since the
// adapter measures fixed windows (docs/exec-protocol.md: a program may
// ignore the precision). Every window's observation is also written to
// window-<i>.observation.json in the attempt's directory.
func ramp(ctx context.Context, c config, lr *live.Runner, req exec.Request, e algorithms.Experiment, dec *json.Decoder,
	dir string, stdout io.Writer, logf func(string, ...any)) error {
	lc := lr.Config()
	p, err := makePlan(lr.Workload(), lc.Target, lc.ThinkTime.Duration(), lc.RequestTimeout.Duration(),
		e.Workload.Users, len(c.active(lc.MaxUsers)), e.Timing, c.ReplyTimeout.Duration())
	if err != nil {
		return err
	}
	p.Ramp, p.RampMaxUsers = true, lc.MaxUsers
	// softalloc's steps, read as they come, so that an interrupt is not
	// held up by a read.
	type stepOrErr struct {
		step exec.RampStep
		err  error
	}
	steps := make(chan stepOrErr, 1)
	go func() {
		for {
			var s exec.RampStep
			err := dec.Decode(&s)
			steps <- stepOrErr{s, err}
			if err != nil {
				return
			}
		}
	}()
	next := func(w window) (exec.RampStep, error) {
		obs, err := clientSide(w, *lc.MaxErrorShare, logf)
		if err != nil {
			return exec.RampStep{}, fmt.Errorf("window %d at %d users: %w", w.Index, w.Users, err)
		}
		ew := e
		ew.Workload.Users = w.Users
		ew.Timing.Runtime = time.Duration(w.Window.Seconds * float64(time.Second)).Round(time.Millisecond)
		if obs.Servers, err = lr.Servers(ctx, ew, w.End()); err != nil {
			return exec.RampStep{}, fmt.Errorf("window %d at %d users: servers: %w", w.Index, w.Users, err)
		}
		if err := obs.Validate(); err != nil {
			return exec.RampStep{}, fmt.Errorf("window %d at %d users: the observation: %w", w.Index, w.Users, err)
		}
		out, err := json.Marshal(exec.Response{ProtocolVersion: req.ProtocolVersion, Observation: wire.FromObservation(obs),
			Ramp: &exec.RampWindow{Users: w.Users, StartSeconds: w.Window.Start - w.Began, EndSeconds: w.Window.End - w.Began}})
		if err != nil {
			return exec.RampStep{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("window-%d.observation.json", w.Index)), append(out, '\n'), 0o644); err != nil {
			return exec.RampStep{}, err
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
			return exec.RampStep{}, err
		}
		select {
		case s := <-steps:
			switch {
			case errors.Is(s.err, io.EOF):
				logf("stdin ended after window %d: softalloc is gone; ending the ramp", w.Index)
				return exec.RampStep{}, nil
			case s.err != nil:
				return exec.RampStep{}, fmt.Errorf("read the step after window %d: %w", w.Index, s.err)
			}
			if s.step.Users > lc.MaxUsers {
				return exec.RampStep{}, fmt.Errorf("the step after window %d: %d users; want at most %d (the runner section's maxUsers)", w.Index, s.step.Users, lc.MaxUsers)
			}
			return s.step, nil
		case <-ctx.Done():
			return exec.RampStep{}, fmt.Errorf("interrupted after window %d; stopped the master and the workers: %w", w.Index, ctx.Err())
		}
	}
	return runRamp(ctx, c, p, dir, logf, next)
}

// experiment converts the message into the experiment the live runner's
// helpers take.
func experiment(r exec.Request) (algorithms.Experiment, error) {
	t, err := r.Timing.Algorithms()
	if err != nil {
		return algorithms.Experiment{}, err
	}
	if r.Workload.Users < 1 {
		return algorithms.Experiment{}, fmt.Errorf("workload.users %d: want at least 1", r.Workload.Users)
	}
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: r.Topology},
		Allocation: algorithms.Allocation{},
		Workload:   algorithms.Workload{Users: r.Workload.Users},
		Timing:     t,
	}
	for _, rt := range r.Tiers {
		tier := algorithms.Tier{Name: rt.Name, Role: rt.Role, Replicas: rt.Replicas, Cores: rt.Cores}
		if rt.Pools.Threads > 0 {
			tier.Pools = append(tier.Pools, algorithms.PoolThreads)
		}
		if rt.Pools.Connections > 0 {
			tier.Pools = append(tier.Pools, algorithms.PoolConnections)
		}
		if len(tier.Pools) > 0 {
			e.Allocation[rt.Name] = algorithms.TierPools{Threads: rt.Pools.Threads, Connections: rt.Pools.Connections}
		}
		e.Deployment.Tiers = append(e.Deployment.Tiers, tier)
	}
	return e, nil
}

// clientSide is the observation's client side: pages, their times and the
// failures of the window, from the workers' statistics merged by Locust.
func clientSide(w window, maxErrorShare float64, logf func(string, ...any)) (algorithms.Observation, error) {
	h, err := histogram(w.Total)
	if err != nil {
		return algorithms.Observation{}, fmt.Errorf("the window's statistics: %w", err)
	}
	pages, failed := w.Total.NumRequests, w.Total.NumFailures
	if failed > 0 {
		if share := float64(failed) / float64(failed+pages); share > maxErrorShare {
			// An outage, not a measurement, as the live runner judges it.
			return algorithms.Observation{}, fmt.Errorf("%d of %d pages failed in the window (%.0f%%: %s), more than maxErrorShare %.0f%%: the trial measured an outage, not the deployment",
				failed, failed+pages, 100*share, causes(w.Errors), 100*maxErrorShare)
		}
		logf("%d failed pages in the window (%s)", failed, causes(w.Errors))
	}
	return algorithms.Observation{
		RuntimeSeconds: w.Window.Seconds,
		Throughput:     float64(pages) / w.Window.Seconds,
		ResponseTimes:  h,
		Errors:         failed,
	}, nil
}
