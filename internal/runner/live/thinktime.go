package live

import (
	"fmt"
	"os"
	"time"
)

// WorkloadThinkTime is the mean think time of the workload file a live
// runner section names (relative to the deployment file at path), and that
// file as written; 0 and "" when the section names none. advise takes it
// for a closed model when the windows count no users: the users' think time
// is what a queueing model of their pages needs, and without it advise
// models an open workload, whose critical station at 95% holds a queue of
// 19 jobs (rho/(1-rho)) that a closed population of users never builds.
func WorkloadThinkTime(section map[string]any, path string) (time.Duration, string, error) {
	c, err := parseConfig(section, path, true)
	if err != nil {
		return 0, "", err
	}
	if c.Workload == "" {
		return 0, "", nil
	}
	b, err := os.ReadFile(c.path(c.Workload))
	if err != nil {
		return 0, "", fmt.Errorf("runner section: workload: %w", err)
	}
	w, err := ParseWorkload(b)
	if err != nil {
		return 0, "", fmt.Errorf("runner section: workload %s: %w", c.Workload, err)
	}
	return w.ThinkTime.Mean.Duration(), c.Workload, nil
}
