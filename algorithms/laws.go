package algorithms

import "math"

// The operational laws of Denning and Buzen, as the paper's Section IV uses
// them (its reference [12]). They hold for any system observed over a window
// in which arrivals and completions balance; no distributional assumption is
// made. Units follow the caller: with throughput in requests per second and
// times in seconds, jobs come out as a mean count.
//
// The functions do no validation: they are arithmetic on measured values and
// return what the formula gives, except where a division by zero has an
// obvious meaning (documented per function).

// LittlesLaw is L = X * R: the mean number of jobs inside a system (a server,
// a tier, the whole chain) from its throughput X and mean response time R.
// Table I of the paper: Apache on 1/4/1/4 at 847 pages/s and 0.147 s holds
// 847 * 0.147 = 124.5 jobs.
func LittlesLaw(throughput, responseTime float64) float64 {
	return throughput * responseTime
}

// ForcedFlow is the forced flow law X_k = V_k * X: the throughput of a
// resource k that each system-level request visits V_k times on average.
// With 3.22 queries per page, 847 pages/s give 2727 queries/s at C-JDBC.
func ForcedFlow(visits, throughput float64) float64 {
	return visits * throughput
}

// UtilizationLaw is U = X * D: the utilisation of a resource from the system
// throughput X and the resource's service demand D per system-level request
// (D = V_k * S_k, visits times service time per visit). For a multi-core
// resource it is the busy cores; divide by the cores for a share in [0,1].
func UtilizationLaw(throughput, demand float64) float64 {
	return throughput * demand
}

// ServiceDemand is D = U / X, the service demand per system-level request
// inferred from a measured utilisation U and throughput X: C-JDBC saturated
// (U = 1) at 847 pages/s demands 1/847 s = 1.18 ms per page. It returns 0
// when X is 0 (nothing completed, nothing to attribute).
func ServiceDemand(utilization, throughput float64) float64 {
	if throughput == 0 {
		return 0
	}
	return utilization / throughput
}

// ResponseTimeLaw is the interactive response time law R = N/X - Z of a
// closed system of N users, each thinking Z seconds between the answer to one
// request and the next request, completing X requests per second in all.
// 5,800 users at 740 pages/s with Z = 7 s wait 0.84 s per page. It returns
// +Inf when X is 0 and N > 0 (no request ever completes) and 0 when both are 0.
func ResponseTimeLaw(users, throughput, thinkTime float64) float64 {
	if throughput == 0 {
		if users == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return users/throughput - thinkTime
}
