package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/discover"
	"github.com/softalloc/softalloc/internal/safefile"
)

// initOptions are init's.
type initOptions struct {
	f          *factory
	prometheus string
	settings   discover.Settings
	file       string
	force      bool
	output     string
	timeout    time.Duration
}

// newCmdInit is `softalloc init`: a deployment file from what Prometheus scrapes.
func newCmdInit(f *factory, runF func(*initOptions) error) *cobra.Command {
	o := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a deployment file from what your Prometheus scrapes",
		Long: `init asks a Prometheus which exporters it scrapes (apache_exporter,
Micrometer's Tomcat, HikariCP and JVM metrics, php-fpm's status page,
mysqld_exporter, postgres_exporter, prometheus-pgbouncer-exporter 2.x,
node_exporter, process-exporter, cAdvisor, the testbed's cgroup exporter),
proposes the tiers in the chain's order (web, app, pooler, db) with their
servers, presets and the pool sizes they run with now, and writes a
commented deployment file for the live runner.

What the metrics cannot tell is written as "# DECIDE:" comments and listed on
stderr: the target URL and the workload when not given, the hook that applies
an allocation, the chain's order when two tiers share a role, a tier with no
CPU source, a database with no latency. A missing target or workload is
written empty, so that the runner refuses the file rather than guess. Check
the file with softalloc doctor before a campaign.

Exit codes: 0 when the file was written (with or without decisions left),
1 when the Prometheus cannot be read or scrapes no server softalloc knows,
2 on usage errors.`,
		Example: `  softalloc init --prometheus http://127.0.0.1:9090 > deployment.yaml
  softalloc init --prometheus http://prom:9090 --target http://web:8080 \
    --workload workload.yaml --hook ./apply-pools.sh -o deployment.yaml
  softalloc init --prometheus http://127.0.0.1:9090 --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runInit(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.prometheus, "prometheus", "", "the Prometheus to ask (required), e.g. http://127.0.0.1:9090")
	fs.StringVar(&o.settings.Name, "name", "", "the deployment's name (default my-stack)")
	fs.StringVar(&o.settings.Target, "target", "", "the base URL the load goes to, e.g. http://127.0.0.1:8080")
	fs.StringVar(&o.settings.Health, "health", "", "a URL polled until it answers 2xx before each trial")
	fs.StringVar(&o.settings.Workload, "workload", "", "the workload file, relative to the deployment file (see softalloc workload)")
	fs.StringSliceVar(&o.settings.Hook, "hook", nil, "the hook's argv, comma-separated (placeholders such as {app.threads} are written for you when absent)")
	fs.StringVarP(&o.file, "file", "o", "", "write the deployment file here rather than to stdout")
	fs.BoolVar(&o.force, "force", false, "overwrite --file if it exists")
	fs.StringVar(&o.output, "output", "yaml", "yaml (the deployment file) or json (what was found, for scripts)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on the queries to Prometheus")
	return cmd
}

func runInit(ctx context.Context, o *initOptions) error {
	if o.prometheus == "" {
		return usagef("--prometheus: missing; want the URL of the Prometheus that scrapes your stack, e.g. http://127.0.0.1:9090")
	}
	for _, u := range []struct{ flag, val string }{{"--prometheus", o.prometheus}, {"--target", o.settings.Target}, {"--health", o.settings.Health}} {
		if u.val == "" {
			continue
		}
		p, err := url.Parse(u.val)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return usagef("%s: want an http:// or https:// URL, got %q", u.flag, u.val)
		}
	}
	if o.output != "yaml" && o.output != "json" {
		return usagef("--output: want yaml or json, got %q", o.output)
	}
	if !(o.timeout > 0) {
		return usagef("--timeout: want a duration > 0, got %s", o.timeout)
	}
	if o.file != "" && !o.force {
		if _, err := os.Lstat(o.file); err == nil {
			return usagef("--file %q exists; pass --force to overwrite it", o.file)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	p, err := discover.Discover(ctx, o.prometheus, nil)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	write := func(w io.Writer) error {
		if o.output == "json" {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(p)
		}
		_, err := w.Write(discover.Render(p, o.settings))
		return err
	}
	if o.file == "" {
		if err := write(o.f.Out); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	} else if err := safefile.Write(o.file, 0o644, write); err != nil {
		return fmt.Errorf("init: write %s: %w", o.file, err)
	}
	for _, d := range p.Decide {
		fmt.Fprintf(o.f.Err, "softalloc: init: decide: %s\n", d)
	}
	return nil
}
