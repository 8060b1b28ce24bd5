package algorithms

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Saturation is one saturated resource of one server.
type Saturation struct {
	Server      string  `json:"server"`
	Tier        string  `json:"tier"`
	Resource    string  `json:"resource"` // "cpu", another hardware resource, or a pool name
	Utilization float64 `json:"utilization"`
	Hardware    bool    `json:"hardware"`
}

func (s Saturation) String() string { return s.Server + "/" + s.Resource }

// Saturations lists the saturated hardware resources and the saturated pools
// that the deployment's allocation controls, hardware first, each group by
// decreasing utilisation.
func Saturations(d Deployment, o Observation, opts Options) (hardware, soft []Saturation) {
	opts = opts.withDefaults()
	for _, s := range o.Servers {
		if s.CPU >= opts.HardwareThreshold {
			hardware = append(hardware, Saturation{s.Name, s.Tier, "cpu", s.CPU, true})
		}
		for r, u := range s.Resources {
			if u >= opts.HardwareThreshold {
				hardware = append(hardware, Saturation{s.Name, s.Tier, r, u, true})
			}
		}
		tier, ok := d.Tier(s.Tier)
		for _, p := range s.Pools {
			if !ok || !tier.HasPool(p.Name) || p.Size <= 0 {
				continue
			}
			full := p.FullShare >= opts.SoftThreshold
			if p.FullShare < 0 {
				full = p.Utilization() >= opts.HardwareThreshold
			}
			if full {
				soft = append(soft, Saturation{s.Name, s.Tier, p.Name, p.Utilization(), false})
			}
		}
	}
	byUse := func(x []Saturation) {
		sort.SliceStable(x, func(i, j int) bool { return x[i].Utilization > x[j].Utilization })
	}
	byUse(hardware)
	byUse(soft)
	return hardware, soft
}

// tierInterval is the utilisation of the critical resource on the
// critical tier's busiest server, the measure FindCriticalResource tests,
// with its interval (CPU usage has one; throttling and other resources are
// bare means).
func tierInterval(o Observation, c Critical) Interval {
	var u Interval
	for _, s := range o.Servers {
		if s.Tier != c.Tier {
			continue
		}
		var v Interval
		switch {
		case c.Resource != "cpu" && c.Resource != "":
			v = Interval{Mean: s.Resources[c.Resource]}
		case c.Throttled && s.Throttled > s.CPU:
			v = Interval{Mean: s.Throttled}
		default:
			v = s.CPUInterval()
		}
		if v.Mean > u.Mean {
			u = v
		}
	}
	return u
}

// hardwareVerdict says whether o's busiest hardware is at or past the
// threshold: Above when some resource's interval lies at or above it,
// Below when every one lies below, Indistinguishable when the highest
// interval contains it. A bare mean at the threshold counts as at it.
func hardwareVerdict(o Observation, threshold float64) Verdict {
	v := Below
	for _, s := range o.Servers {
		vals := []Interval{s.CPUInterval(), {Mean: s.Throttled}}
		for _, u := range s.Resources {
			vals = append(vals, Interval{Mean: u})
		}
		for _, u := range vals {
			w := u.VersusValue(threshold)
			if u.HalfWidth == 0 && u.Mean == threshold {
				w = Above
			}
			v = max(v, w)
		}
	}
	return v
}

// busiestInterval is the highest CPU utilisation of o with its interval.
func busiestInterval(o Observation) Interval {
	var u Interval
	for _, s := range o.Servers {
		if s.CPU > u.Mean {
			u = s.CPUInterval()
		}
	}
	return u
}

// indistinguishableNote is the warning for a saturation test that stayed
// within the noise after every refinement; decided says how it was decided.
func indistinguishableNote(what string, users int, iv Interval, threshold float64, decided string) string {
	return fmt.Sprintf("at %d users %s (%s) could not be told from %.2f at the finest precision tried: %s", users, what, iv, threshold, decided)
}

// throttledCritical answers when throughput stopped growing at workload
// with no hardware resource at the threshold, but a CPU-capped server was
// throttled in at least the threshold's share of its quota periods: its
// CPU is the critical resource, saturated from the first workload at the
// reserve allocation where its throttling reached the threshold. Usage stays
// the first test; throttling alone can read saturation early, while
// throughput still grows (issue 25's testbed runs with 20 ms quota slices).
func throttledCritical(res Critical, o Observation, workload int, opts Options) (Critical, bool) {
	var sat []Saturation
	for _, s := range o.Servers {
		if s.Throttled >= opts.HardwareThreshold {
			sat = append(sat, Saturation{s.Name, s.Tier, "cpu", s.CPUSaturation(), true})
		}
	}
	if len(sat) == 0 {
		return res, false
	}
	sort.SliceStable(sat, func(i, j int) bool { return sat[i].Utilization > sat[j].Utilization })
	c := sat[0]
	res.Tier, res.Server, res.Resource, res.Utilization = c.Tier, c.Server, c.Resource, c.Utilization
	res.Saturated, res.Throttled, res.SaturationWorkload = sat, true, workload
	for _, t := range res.Trials {
		s, ok := t.Observation.Server(c.Server)
		if ok && t.Experiment.Allocation.Key() == res.Reserve.Key() && s.Throttled >= opts.HardwareThreshold &&
			t.Experiment.Workload.Users < res.SaturationWorkload {
			res.SaturationWorkload = t.Experiment.Workload.Users
		}
	}
	srv, _ := o.Server(c.Server)
	res.Warnings = append(res.Warnings, fmt.Sprintf(
		"throughput stopped growing with no hardware resource at %.2f, but %s was throttled in %.2f of its CPU quota's periods (usage %.2f of the quota): its CPU is taken as the critical resource, saturated from %d users; a capped server can lose quota it cannot use",
		opts.HardwareThreshold, c.Server, srv.Throttled, srv.CPU, res.SaturationWorkload))
	return res, true
}

// hintBand is how far below the threshold a plateau's busiest reading may
// sit and still be suggested as the bottleneck: a capped server can idle in
// some quota periods while it limits throughput (issue 36: php-fpm at 0.94
// of its quota, throttled in 0.90 of its periods, as throughput stopped).
const hintBand = 0.15

// thresholdHint is, for an error that found no hardware resource at the
// threshold when throughput stopped growing, the threshold that would name
// the busiest one when it read within hintBand of it: the user decides
// whether it is the bottleneck, the tool does not guess. "" otherwise.
func thresholdHint(o Observation, threshold float64) string {
	var what string
	var u float64
	for _, s := range o.Servers {
		if v := s.CPUSaturation(); v > u {
			what, u = s.Name+"'s cpu", v
		}
		for _, r := range slices.Sorted(maps.Keys(s.Resources)) {
			if v := s.Resources[r]; v > u {
				what, u = s.Name+"'s "+r, v
			}
		}
	}
	if u >= threshold || u < threshold-hintBand {
		return ""
	}
	return fmt.Sprintf("; %s read %.2f at most: if it is the bottleneck, --hw-threshold %.2f names it", what, u, math.Floor(u*100)/100)
}

// busiestHardware names the three highest hardware readings of an
// observation, with CPU throttling where a quota was measured, so that an
// answer without a critical resource still says what was seen.
func busiestHardware(o Observation) string {
	type reading struct {
		what string
		u    float64
	}
	var rs []reading
	for _, s := range o.Servers {
		cpu := fmt.Sprintf("%s cpu %.2f", s.Name, s.CPU)
		if s.Throttled > 0 {
			cpu += fmt.Sprintf(" (throttled in %.2f of its quota periods)", s.Throttled)
		}
		rs = append(rs, reading{cpu, s.CPUSaturation()})
		for _, r := range slices.Sorted(maps.Keys(s.Resources)) {
			rs = append(rs, reading{fmt.Sprintf("%s %s %.2f", s.Name, r, s.Resources[r]), s.Resources[r]})
		}
	}
	if len(rs) == 0 {
		return "no server"
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].u > rs[j].u })
	parts := make([]string, 0, 3)
	for _, r := range rs[:min(3, len(rs))] {
		parts = append(parts, r.what)
	}
	return strings.Join(parts, ", ")
}
