package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/softalloc/softalloc/internal/metrics"
)

// metricsFlags export a command's results as Prometheus metrics.
type metricsFlags struct {
	file     string
	gateway  string
	job      string
	grouping []string
}

func (f *metricsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "metrics-file", "", "write the results as Prometheus text format to FILE (atomically; for node_exporter's textfile collector)")
	fs.StringVar(&f.gateway, "pushgateway", "", "push the results to this Prometheus Pushgateway URL")
	fs.StringVar(&f.job, "job", "softalloc", "Pushgateway job name")
	fs.StringArrayVar(&f.grouping, "grouping", nil, "Pushgateway grouping label LABEL=VALUE (repeatable)")
}

func (f *metricsFlags) check() error {
	if _, err := metrics.ParseGrouping(f.grouping); err != nil {
		return usageError{err}
	}
	if f.gateway == "" && len(f.grouping) > 0 {
		return usagef("--grouping needs --pushgateway")
	}
	return checkOutputFile("--metrics-file", f.file)
}

func (f *metricsFlags) wanted() bool { return f.file != "" || f.gateway != "" }

// emit writes the file first, so a failed push still leaves it.
func (f *metricsFlags) emit(ctx context.Context, set *metrics.Set) error {
	if !f.wanted() {
		return nil
	}
	var errs []error
	if f.file != "" {
		if err := set.WriteFile(f.file); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-file %q: %w", f.file, plainPathError(err)))
		}
	}
	if f.gateway != "" {
		grouping, _ := metrics.ParseGrouping(f.grouping)
		errs = append(errs, set.Push(ctx, f.gateway, f.job, grouping))
	}
	return errors.Join(errs...)
}
