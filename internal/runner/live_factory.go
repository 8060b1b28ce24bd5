package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/softalloc/softalloc/algorithms"
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

// WindowSource reads windows of a deployment's recorded traffic.
type WindowSource interface {
	Windows(ctx context.Context, d algorithms.Deployment, start, end time.Time, step time.Duration) ([]algorithms.Window, error)
}

// NewWindows builds the reader of recorded traffic the deployment file's
// runner section names: its Prometheus and queries, as the live runner
// reads them for an experiment (no target, workload or hook needed).
func NewWindows(cfg Config) (WindowSource, error) {
	if cfg.DeploymentFile == nil || cfg.DeploymentFile.Runner == nil {
		return nil, fmt.Errorf("recorded traffic: want --deployment FILE whose runner section names Prometheus and the tiers' queries (see testbed/README.md, Windows of recorded traffic)")
	}
	r, err := live.NewPassive(cfg.DeploymentFile.Runner, cfg.DeploymentPath)
	if err != nil {
		return nil, fmt.Errorf("recorded traffic: deployment %q: %w", cfg.DeploymentPath, err)
	}
	r.Log = cfg.Log
	return r, nil
}
