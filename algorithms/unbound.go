package algorithms

import (
	"context"
	"fmt"
	"slices"
)

// A pool that is full when the critical resource saturates bounds what
// minJobs can read (issue 39): the jobs inside the critical tier are
// clipped at its size, and from an under-allocated start minJobs reads low
// (on the simulator's 1/2/1/2, 37.7 from 400-5-5 against 42.5 from
// 400-150-60). unboundMinJobs doubles that pool, only it, and reads
// minJobs again at the smallest workload where the critical resource
// saturates with the doubled pool: it tests where the first reading was
// taken (with more of the pool the resource saturates there too), or, if
// it does not, a step up at a time while throughput grows; then it
// brackets and bisects below, from the first reading's last unsaturated
// point, as the first reading did. Every reading is a trial whose critical
// resource tested saturated: an earlier version ran the whole
// InferMinConcurrentJobs again, which on the live Go testbed read minJobs
// 2.6 at 60 users where throughput had stopped growing within the noise,
// below saturation, after 120 users had saturated the CPU with the first
// pools, and recommended 100-3-3, 0.67 of the grid's best (8c10f8b).

// readingObservation is the trial minJobs was read from: the last (the
// most precise) of the allocation at WLmin.
func readingObservation(m MinJobs, a Allocation) (Observation, bool) {
	var o Observation
	found := false
	for _, t := range m.Trials {
		if t.Experiment.Workload.Users == m.WLmin && t.Experiment.Allocation.Key() == a.Key() {
			o, found = t.Observation, true
		}
	}
	return o, found
}

// unboundMinJobs returns minJobs read again with the pools that bounded it
// doubled, and the critical resource with that reserve, or m and c as they
// were when no pool bounded the reading. Only a reading at saturation of a
// CPU is checked: memory that larger pools exhaust is no reason to double
// (overAllocation), and a knee or a peak reading is not where the resource
// saturates.
func unboundMinJobs(ctx context.Context, x Experimenter, d Deployment, c Critical, m MinJobs, opts Options) (Critical, MinJobs, error) {
	opts = opts.withDefaults()
	if opts.Mode == ModePaper || c.Resource != "cpu" || m.Reading != string(ReadAtSaturation) {
		return c, m, nil
	}
	saturated := func(o Observation) Verdict {
		iv := tierInterval(o, c)
		if iv.HalfWidth == 0 && iv.Mean == opts.HardwareThreshold {
			return Above
		}
		return iv.VersusValue(opts.HardwareThreshold)
	}
	p := &procedure{x: x, d: d, opts: opts, name: "infer-min-jobs"}
	finish := func(err error) (Critical, MinJobs, error) {
		m.Trials = append(m.Trials, p.trials...)
		m.Experiments = len(m.Trials)
		return c, m, err
	}
	for doublings := 0; doublings < opts.MaxDoublings; doublings++ {
		at, ok := readingObservation(m, c.Reserve)
		if !ok {
			return finish(nil)
		}
		bound := boundingPools(d, at, opts)
		if len(bound) == 0 {
			return finish(nil)
		}
		s := doubleFull(c.Reserve, bound)
		if s.Key() == c.Reserve.Key() {
			return finish(nil) // nothing the allocation sets was full
		}
		w := m.WLmin
		o, _, _, v, err := p.decided(ctx, s, w, saturated)
		if err != nil {
			return finish(err)
		}
		for steps := 0; v == Below; steps++ {
			below := o
			if steps == maxStepsUp || w+opts.Step > opts.MaxWorkload {
				return finish(fmt.Errorf("infer-min-jobs: %s below %.2f from %d to %d users with %s (%s doubled: full where minJobs was read at %d users with %s)",
					c.Resource, opts.HardwareThreshold, m.WLmin, w, s, joinSaturations(bound), m.WLmin, c.Reserve))
			}
			w += opts.Step
			if o, _, _, v, err = p.decided(ctx, s, w, saturated); err != nil {
				return finish(err)
			}
			if v == Below && o.ThroughputInterval().Versus(below.ThroughputInterval()) != Above {
				// The doubled pool served no more than the reserve did:
				// it did not bound the reading, which stands. On
				// WordPress a pool read full from a listen queue behind
				// idle children (9ee13ff) was doubled from 40 to 80
				// children, which served 14.9 pages/s at 20 and 22 users
				// with the CPU below 0.95, where 40 had served 15.9.
				if best, ok := bestThroughput(slices.Concat(m.Trials, c.Trials), c.Reserve); ok &&
					o.ThroughputInterval().Versus(best.ThroughputInterval()) != Above && below.ThroughputInterval().Versus(best.ThroughputInterval()) != Above {
					m.Warnings = append(m.Warnings, fmt.Sprintf(
						"%s full where minJobs was read at %d users, but doubled (%s) it served no more (%.4g pages/s at %d users and %.4g at %d, against %.4g with %s), with %s below %.2f: "+
							"the pool did not bound the reading, which stands",
						joinSaturations(bound), m.WLmin, s, below.Throughput, w-opts.Step, o.Throughput, w, best.Throughput, c.Reserve, c.Resource, opts.HardwareThreshold))
					return finish(nil)
				}
				return finish(fmt.Errorf("infer-min-jobs: %s below %.2f at %d users with %s (%s doubled: full where minJobs was read at %d users with %s), and throughput stopped growing",
					c.Resource, opts.HardwareThreshold, w, s, joinSaturations(bound), m.WLmin, c.Reserve))
			}
		}
		// With more of the pool the resource may saturate a little
		// earlier: bracket and bisect down to the smallest workload where
		// it saturates with it, from the first reading's last unsaturated
		// point. Every reading tested saturated; never one that is not.
		lo := w - opts.Step
		for _, pt := range m.Points {
			if pt.Workload < m.WLmin && pt.Workload > lo {
				lo = pt.Workload
			}
		}
		bracketed := false
		for i := 0; i <= maxStepsUp && lo >= opts.SmallStep && lo < w; i++ {
			ol, _, _, vl, err := p.decided(ctx, s, lo, saturated)
			if err != nil {
				return finish(err)
			}
			if vl == Below {
				bracketed = true
				break
			}
			w, o = lo, ol
			lo = max(opts.SmallStep, w-opts.Step)
		}
		for bracketed && w-lo > opts.SmallStep {
			mid := (lo + w) / 2
			om, _, _, vm, err := p.decided(ctx, s, mid, saturated)
			if err != nil {
				return finish(err)
			}
			if vm == Below {
				lo = mid
			} else {
				w, o = mid, om
			}
		}
		pt := scanPoint(w, o, c)
		pt.SLOSatisfaction = o.SLOSatisfaction(m.KneeThreshold)
		// The trials so far go with the reading, so that the next
		// doubling finds this one's.
		m.Trials = append(m.Trials, p.trials...)
		p.trials = nil
		next := MinJobs{Reading: string(ReadAtSaturation), WLmin: w, MinJobs: LittlesLaw(pt.CriticalThroughput, pt.CriticalResponseTime),
			KneeThreshold: m.KneeThreshold, Points: append(append([]ScanPoint{}, m.Points...), pt), Trials: m.Trials,
			Warnings: append(append([]string{}, m.Warnings...), fmt.Sprintf(
				"%s full where minJobs was read (%.1f jobs at %d users with %s): doubled that pool and read again at %d users with %s, where %s saturates",
				joinSaturations(bound), m.MinJobs, m.WLmin, c.Reserve, w, s, c.Resource))}
		if err := next.measure(d, o, c); err != nil {
			return finish(err)
		}
		c.Reserve = s
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s full where minJobs was read at %d users: doubled that pool (%s)", joinSaturations(bound), m.WLmin, s))
		m = next
	}
	return finish(nil)
}

// bestThroughput is the observation of the highest throughput among the
// trials of allocation a.
func bestThroughput(trials []Trial, a Allocation) (Observation, bool) {
	var best Observation
	found := false
	for _, t := range trials {
		if t.Experiment.Allocation.Key() == a.Key() && (!found || t.Observation.Throughput > best.Throughput) {
			best, found = t.Observation, true
		}
	}
	return best, found
}
