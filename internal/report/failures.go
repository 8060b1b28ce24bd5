package report

import (
	"fmt"

	"github.com/softalloc/softalloc/algorithms"
)

// Failures are the failed pages of the trials a document reports. They sit
// beside every throughput and goodput printed for a script, since a broken
// allocation (a pool too large for the database's connections, say) only
// looks slow in throughput alone.
type Failures struct {
	// Errors counts pages that failed (refused, timed out, 5xx) and are in
	// no throughput; ErrorShare is Errors over the pages attempted, served
	// and failed (0 when there were none).
	Errors     int64   `json:"errors"`
	ErrorShare float64 `json:"errorShare"`
	// Drops counts connection attempts a full accept queue refused, Retries
	// the retransmissions they caused.
	Drops   int64 `json:"drops"`
	Retries int64 `json:"retries"`
}

// servedPages is the pages an observation served in its window: its
// response times' count, or throughput x runtime where the runner measured
// no response times (a Prometheus window).
func servedPages(o algorithms.Observation) float64 {
	if n := o.ResponseTimes.Count(); n > 0 {
		return float64(n)
	}
	return max(0, o.Pages())
}

// ErrorShare is errors over the pages attempted, 0 when none were.
func ErrorShare(errors int64, served float64) float64 {
	if errors <= 0 {
		return 0
	}
	return float64(errors) / (float64(errors) + max(0, served))
}

// ObservationFailures sums the failed pages of observations.
func ObservationFailures(obs ...algorithms.Observation) Failures {
	var f Failures
	var served float64
	for _, o := range obs {
		f.Errors += o.Errors
		f.Drops += o.Drops
		f.Retries += o.Retries
		served += servedPages(o)
	}
	f.ErrorShare = ErrorShare(f.Errors, served)
	return f
}

// TrialFailures sums the failed pages of trials.
func TrialFailures(trials []algorithms.Trial) Failures {
	obs := make([]algorithms.Observation, len(trials))
	for i, t := range trials {
		obs[i] = t.Observation
	}
	return ObservationFailures(obs...)
}

// distinctTrials drops the trials a later procedure repeated from an
// earlier one (Recommend answers them from memory): the failures of
// recommend's experiments count each experiment once.
func distinctTrials(lists ...[]algorithms.Trial) []algorithms.Trial {
	seen := map[string]bool{}
	var out []algorithms.Trial
	for _, l := range lists {
		for _, t := range l {
			e := t.Experiment
			k := fmt.Sprintf("%s|%s|%d|%v", e.Deployment.Topology, e.Allocation.Key(), e.Workload.Users, e.Timing)
			if !seen[k] {
				seen[k] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// ScanPointJSON is a point of recommend's scan with the failed pages of
// its trial.
type ScanPointJSON struct {
	algorithms.ScanPoint
	Errors     int64   `json:"errors"`
	ErrorShare float64 `json:"errorShare"`
}

// scanPoints are the scan's points with their trials' failed pages: the
// last trial of the reserve at the point's workload, find-critical's or the
// scan's own.
func scanPoints(r algorithms.Recommendation) []ScanPointJSON {
	byUsers := map[int]algorithms.Observation{}
	for _, t := range r.Critical.Trials {
		if t.Experiment.Allocation.Key() == r.Critical.Reserve.Key() {
			byUsers[t.Experiment.Workload.Users] = t.Observation
		}
	}
	for _, t := range r.MinJobs.Trials {
		byUsers[t.Experiment.Workload.Users] = t.Observation
	}
	out := make([]ScanPointJSON, len(r.MinJobs.Points))
	for i, p := range r.MinJobs.Points {
		out[i].ScanPoint = p
		if o, ok := byUsers[p.Workload]; ok {
			f := ObservationFailures(o)
			out[i].Errors, out[i].ErrorShare = f.Errors, f.ErrorShare
		}
	}
	return out
}
