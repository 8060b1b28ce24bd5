package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

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

// check refuses, before the first experiment, what would fail only at the
// end of the campaign.
func (f *metricsFlags) check() error {
	if _, err := metrics.ParseGrouping(f.grouping); err != nil {
		return usageError{err}
	}
	if f.gateway == "" && len(f.grouping) > 0 {
		return usagef("--grouping needs --pushgateway")
	}
	if f.gateway != "" {
		u, err := url.Parse(f.gateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return usagef("--pushgateway %q: want the Pushgateway's URL, such as http://pushgateway:9091", f.gateway)
		}
		if strings.TrimSpace(f.job) == "" {
			return usagef("--job: want a job name for the Pushgateway to group the metrics by, got an empty one")
		}
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
