package classes

import "github.com/softalloc/softalloc/internal/sim/engine"

// newCPU is the server's processor under the workload's scheduling policy
// at the given speed (the schedulers are the engine's).
func newCPU(w *Workload, speed float64) engine.Scheduler {
	cores := w.Server.Cores
	switch w.Server.Policy {
	case policyRR:
		return engine.NewRoundRobin(cores, float64(w.Server.Quantum), speed)
	case policyWeighted:
		weights := make([]float64, len(w.Classes))
		for k := range w.Classes {
			weights[k] = w.Classes[k].Weight
		}
		return engine.NewWeighted(cores, speed, weights)
	case policyPriority:
		levels := make([]int, len(w.Classes))
		for k := range w.Classes {
			levels[k] = w.Classes[k].Priority
		}
		return engine.NewPriority(cores, speed, levels)
	}
	return engine.NewProcessorSharing(cores, speed, len(w.Classes))
}
