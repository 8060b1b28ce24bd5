package runner

import (
	"fmt"

	"github.com/softalloc/softalloc/internal/runner/live"
)

// newLive builds the live runner from the deployment file's runner section.
func newLive(cfg Config) (Runner, error) {
	if cfg.DeploymentFile == nil || cfg.DeploymentFile.Runner == nil {
		return Runner{}, fmt.Errorf("runner live: want --deployment FILE whose runner section names the target, the workload and Prometheus (see testbed/deployment.yaml)")
	}
	if cfg.Retries < 0 {
		return Runner{}, fmt.Errorf("runner live: --runner-retries %d: want 0 or more", cfg.Retries)
	}
	r, err := live.New(cfg.DeploymentFile.Runner, cfg.DeploymentPath)
	if err != nil {
		return Runner{}, fmt.Errorf("runner live: deployment %q: %w", cfg.DeploymentPath, err)
	}
	r.Log, r.Retries, r.Timeout = cfg.Log, cfg.Retries, cfg.Timeout
	return Runner{
		Experimenter:  r,
		Name:          "live",
		DefaultTiming: r.DefaultTiming(),
		Settings:      r.Settings(),
	}, nil
}
