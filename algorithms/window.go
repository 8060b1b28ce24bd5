package algorithms

// Window is a stretch of a deployment's own traffic, observed without running
// an experiment: what its monitoring recorded over a time range, or one
// recorded observation. Advise applies the operational laws to windows as
// Algorithm 1 applies them to experiments.
type Window struct {
	// Label names the window in messages: its time range, or its line in a file.
	Label string `json:"label"`
	// Observation is the window's page throughput (pages/s) and the servers'
	// readings, as a runner reports them; ResponseTimes may be empty.
	Observation Observation `json:"observation"`
	// Users is the mean number of concurrent users over the window (a closed
	// workload's sessions); 0 when unknown.
	Users float64 `json:"users,omitempty"`
	// ResponseTime is the mean page response time in seconds; 0 when unknown
	// (then the observation's response-time histogram is used, if any).
	ResponseTime float64 `json:"responseTime,omitempty"`
	// Problem, when set, is why the window cannot be used (a gap, a counter
	// reset, NaN, a missing series), naming the series: such a window is
	// reported and left out.
	Problem string `json:"problem,omitempty"`
}
