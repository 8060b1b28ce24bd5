// Package algorithms is the soft-resource allocation method of Wang et al.,
// "The Impact of Soft Resource Allocation on n-Tier Application Scalability"
// (IPDPS 2011), as a pure library: the operational laws, mean value analysis,
// intervention analysis, and Algorithm 1 driving any Experimenter.
//
// It knows nothing of files, commands or concrete runners: it defines the
// Experimenter interface it consumes (one method, RunExperiment) and the
// Observation every runner returns, and its procedures return warnings beside
// their results instead of printing.
//
// # Algorithm 1
//
//   - FindCriticalResource raises the workload step by step until throughput
//     stops growing; the first saturated hardware resource is the critical
//     one, and a saturated pool before it means the allocation is too small,
//     so it is doubled (findcritical.go).
//   - InferMinConcurrentJobs reads minJobs, the critical tier's concurrent
//     jobs at the minimum saturating workload, by Little's law, where the
//     critical resource saturates or at the knee of SLO satisfaction
//     (minjobs.go).
//   - CalculateMinAllocation sizes every tier from minJobs with Little's law
//     and the forced flow law (Formula 3), and RecommendAllocation keeps a
//     front tier's buffer (allocation.go).
//   - Recommend runs the three (recommend.go).
//
// Around them: Sweep and MeasureCapacity measure an allocation as configured
// (a CI capacity check), Grid and Compare rank allocations by goodput
// (validation), and RecommendClassPools and DegradationSchemes size and
// compare per-class pools of a multi-class server through a
// ClassExperimenter.
//
// Options carry documented defaults (DefaultOptions); Mode selects the
// paper's procedure as written or the efficient one that gives the same
// answer with fewer experiments.
package algorithms
