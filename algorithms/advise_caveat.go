package algorithms

import "fmt"

// nearSaturation is how far below the hardware threshold a window's
// critical utilisation may be and still count as a saturated window whose
// jobs the model's minJobs is compared with.
const nearSaturation = 0.1

// queueCaveat says why advise's minJobs differs from the jobs the windows
// saw at saturation, or "" when it does not. The model's minJobs is its
// critical tier's jobs where the critical resource reaches the threshold,
// and most of them queue at that resource: a single exponential server at
// utilisation rho holds rho/(1-rho) jobs, 19 at 95%. A real tier whose pool
// caps its jobs (php-fpm's children, which hold every page they serve) can
// keep its CPU at the threshold with a few: recommend measures those, at
// the least workload that saturates it, and the model's extra jobs would
// wait for the CPU without adding throughput. Said only when windows near
// the threshold (within nearSaturation) held fewer than two thirds of the
// model's jobs.
func queueCaveat(d Deployment, used []Window, crit DemandFit, minJobs, threshold float64) string {
	most, at, n := 0.0, 0.0, 0
	for _, w := range used {
		s, ok := w.Observation.Server(crit.Server)
		if !ok {
			continue
		}
		u := s.CPU
		if crit.Resource != "cpu" {
			u = s.Resources[crit.Resource]
		}
		if u < threshold-nearSaturation {
			continue
		}
		var jobs float64
		for _, o := range w.Observation.Servers {
			if o.Tier == crit.Tier {
				jobs += o.Throughput * o.ResponseTime
			}
		}
		n++
		if jobs > most {
			most, at = jobs, u
		}
	}
	if n == 0 || most <= 0 || minJobs < 1.5*most {
		return ""
	}
	rho := threshold
	return fmt.Sprintf("minJobs %.1f is the queueing model's jobs in tier %s where %s %s reaches %.0f%%, most of them queued at it "+
		"(one exponential server at utilisation rho holds rho/(1-rho) jobs: %.0f at %.0f%%); %d windows within %.0f points of the threshold held at most %.1f jobs there "+
		"(with %s at %.0f%%): a pool that caps the tier's jobs (php-fpm's children) kept the resource near saturation with those, "+
		"and recommend, which measures the jobs at the least saturating workload, answers nearer %.0f",
		minJobs, crit.Tier, crit.Server, crit.Resource, 100*threshold, rho/(1-rho), 100*rho, n, 100*nearSaturation, most, crit.Resource, 100*at, most)
}
