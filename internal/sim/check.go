package sim

import "github.com/softalloc/softalloc/algorithms"

// CheckExperiment reports what the runner's simulation would refuse in e,
// without simulating (runner.ExperimentChecker).
func (r Runner) CheckExperiment(e algorithms.Experiment) error { return CheckExperiment(r.Model, e) }
