package algorithms

import "fmt"

// overAllocation looks in the trials for the evidence that the allocation
// itself exhausted resource c (memory, most often: each php-fpm child or
// JVM thread holds its own): a trial at the same workload with a smaller
// pool on c's tier read less of the resource and a throughput the larger
// pool did not beat. The pool was doubled because it was full, but the
// workers it added only took memory: the bottleneck was elsewhere, or the
// pool was large enough already. It returns the note and true when found.
// CPU is never said to be exhausted by over-allocation here: more threads
// cost it little, and its saturation is the paper's critical resource.
// The trials that may show it are those of allocation a (the one that
// saturated c), each against the trials at its workload with a smaller one.
func overAllocation(trials []Trial, c Saturation, a Allocation) (string, bool) {
	if c.Resource == "cpu" {
		return "", false
	}
	for i := len(trials) - 1; i >= 0; i-- {
		big := trials[i]
		if big.Experiment.Allocation.Key() != a.Key() {
			continue
		}
		s, ok := big.Observation.Server(c.Server)
		if !ok {
			continue
		}
		// The smallest allocation that read less and served as much: the clearest case.
		var small *Trial
		for k := range trials {
			t := &trials[k]
			if t.Experiment.Workload.Users != big.Experiment.Workload.Users || units(t.Experiment.Allocation) >= units(a) {
				continue
			}
			prev, ok := t.Observation.Server(c.Server)
			if !ok || prev.Resources[c.Resource] >= s.Resources[c.Resource] {
				continue
			}
			if big.Observation.ThroughputInterval().Versus(t.Observation.ThroughputInterval().Scaled(flatGrowth)) == Above {
				continue // the larger allocation served more: it was needed
			}
			if small == nil || units(t.Experiment.Allocation) < units(small.Experiment.Allocation) {
				small = t
			}
		}
		if small == nil {
			continue
		}
		prev, _ := small.Observation.Server(c.Server)
		return fmt.Sprintf("%s's %s was exhausted by over-allocation: at %d users the allocation %v read %.2f of it at %.1f pages/s, %v %.2f at %.1f pages/s: "+
			"its use rose with the pools while throughput did not; larger pools only take %s, the bottleneck is elsewhere or the smaller pools sufficed",
			c.Server, c.Resource, big.Experiment.Workload.Users, small.Experiment.Allocation, prev.Resources[c.Resource], small.Observation.Throughput,
			a, s.Resources[c.Resource], big.Observation.Throughput, c.Resource), true
	}
	return "", false
}

// units is the allocation's pool units, all tiers: find-critical doubles
// them together.
func units(a Allocation) int {
	n := 0
	for _, p := range a {
		n += p.Threads + p.Connections
	}
	return n
}
