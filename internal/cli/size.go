package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/topology"
	"github.com/softalloc/softalloc/internal/version"
)

// measuredFile is the input of `softalloc size`: per-tier throughput and
// response time at saturation, as a user read them from logs or an APM.
type measuredFile struct {
	Topology   string                       `yaml:"topology"`
	Deployment string                       `yaml:"deployment"`
	Critical   string                       `yaml:"critical"`
	MinJobs    *float64                     `yaml:"minJobs"` // nil: not given
	Tiers      []algorithms.TierMeasurement `yaml:"tiers"`
}

// sizeOptions are size's.
type sizeOptions struct {
	f          *factory
	file       string // the measurements
	deployment deploymentFlags
	output     string
}

// newCmdSize is `softalloc size`: CalculateMinAllocation alone.
func newCmdSize(f *factory, runF func(*sizeOptions) error) *cobra.Command {
	o := &sizeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "size --measurements measured.yaml",
		Short: "Pool sizes from measured per-tier throughput and response time (Formula 3)",
		Long: `size applies the paper's CalculateMinAllocation to measurements you already
have: each tier's throughput (requests/s, all servers) and mean response time
(seconds) at the minimum saturating workload, and which tier is critical.
The critical tier and those behind it get minJobs = TP x RTT of the critical
tier; a tier in front gets minJobs x RTTratio / Reqratio. Totals are rounded
and split across replicas rounding up. These are lower bounds.

The file is YAML (or JSON with the same keys):

  topology: 1/4/1/4        # or deployment: file.yaml
  critical: cluster
  tiers:
    - {name: web, throughput: 847, responseTime: 0.147}
    - {name: app, throughput: 847, responseTime: 0.0378}
    - {name: cluster, throughput: 2728, responseTime: 0.0082}

minJobs: N may be given instead of the critical tier's measurement.
Use - to read the file from standard input. --topology or -f/--deployment
name the hardware instead of the file's topology or deployment key.`,
		Example: `  softalloc size --measurements measured.yaml
  softalloc size -m measured.yaml --output json
  softalloc size -m measured.yaml -f deployment.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runSize(o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.file, "measurements", "m", "", "measurements file (YAML or JSON; - for stdin)")
	deprecatedAlias(fs, "file", "measurements", &o.file)
	fs.StringVarP(&o.deployment.topology, "topology", "t", "", "topology #W/#A/#C/#D or #W/#A/#D (instead of the file's topology)")
	o.deployment.command = "size"
	fs.StringVarP(&o.deployment.file, "deployment", "f", "", "deployment file (YAML) naming the chain (instead of the file's deployment)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or csv")
	return cmd
}

func runSize(o *sizeOptions) error {
	s := o.f.Streams
	if o.file == "" {
		if o.deployment.file != "" && looksMeasured(o.deployment.file) {
			return usagef("size: -f is --deployment now, as in every command; give the measurements with --measurements %s (-m)", o.deployment.file)
		}
		return usagef("size: want --measurements FILE with per-tier measurements (see softalloc size --help)")
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var data []byte
	var err error
	if o.file == "-" {
		data, err = safefile.ReadAll(s.In, safefile.MaxInput)
	} else {
		data, err = safefile.Read(o.file, safefile.MaxInput)
	}
	if err != nil {
		return configError(fmt.Errorf("size: %w", err))
	}
	// The measurements file is size's whole input: what is wrong with it is
	// a usage error, like a bad flag.
	d, m, err := parseMeasured(data, o.file, o.deployment.topology != "" || o.deployment.file != "")
	if err != nil {
		return configError(err)
	}
	if o.deployment.topology != "" || o.deployment.file != "" {
		// The flags name the hardware; the file's key, if any, gives way.
		if d, _, err = o.deployment.resolve(); err != nil {
			return err
		}
	}
	minJobs := 0.0 // CalculateMinAllocation's "not given"
	if m.MinJobs != nil {
		minJobs = *m.MinJobs
	}
	sz, err := algorithms.CalculateMinAllocation(d, m.Critical, minJobs, m.Tiers)
	if err != nil {
		return configError(fmt.Errorf("size %q: %w", o.file, err))
	}
	_, tiers := algorithms.RecommendAllocation(d, sz, nil)
	switch o.output {
	case "json":
		return report.WriteJSON(s.Out, report.SizeJSON{Topology: d.Topology, Critical: sz.Critical, MinJobs: sz.MinJobs, Tiers: tiers, Version: version.String()})
	case "csv":
		return report.WriteSizeCSV(s.Out, d, sz, tiers)
	}
	return report.WriteSizeTable(s.Out, d, sz, tiers)
}

// looksMeasured says whether path holds a measurements file, for the
// message to a user of size's old -f.
func looksMeasured(path string) bool {
	data, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return false
	}
	_, m, err := parseMeasured(data, path, true)
	return err == nil && len(m.Tiers) > 0
}

// parseMeasured reads a measurements file; hardware says the command line
// names the deployment, so the file need not.
func parseMeasured(data []byte, name string, hardware bool) (algorithms.Deployment, measuredFile, error) {
	var m measuredFile
	if err := oneline.DecodeYAML(data, &m); err != nil {
		if errors.Is(err, io.EOF) {
			return algorithms.Deployment{}, m, fmt.Errorf("measurements %q: the file is empty", name)
		}
		return algorithms.Deployment{}, m, fmt.Errorf("measurements %q: %w", name, err)
	}
	var d algorithms.Deployment
	switch {
	case hardware:
		// The command line names it.
	case m.Topology != "" && m.Deployment != "":
		return d, m, fmt.Errorf("measurements %q: give topology or deployment, not both", name)
	case m.Topology != "":
		var err error
		if d, err = topology.ParseTopology(m.Topology); err != nil {
			return d, m, fmt.Errorf("measurements %q: %w", name, err)
		}
	case m.Deployment != "":
		f, err := topology.LoadDeployment(m.Deployment)
		if err != nil {
			return d, m, fmt.Errorf("measurements %q: %w", name, err)
		}
		d = f.Deployment
	default:
		return d, m, fmt.Errorf("measurements %q: topology: want a topology such as 1/4/1/4 (or deployment: FILE)", name)
	}
	if m.Critical == "" {
		return d, m, fmt.Errorf("measurements %q: critical: want the critical tier's name (one of the topology's tiers)", name)
	}
	// 0 means "not given" to CalculateMinAllocation; a 0 in the file is a value.
	if m.MinJobs != nil && !(*m.MinJobs > 0) {
		return d, m, fmt.Errorf("measurements %q: minJobs: want > 0, got %g", name, *m.MinJobs)
	}
	return d, m, nil
}

func checkOutput(format string) error {
	if format != "table" && format != "json" && format != "csv" {
		return usagef("--output %q: want table, json or csv", format)
	}
	return nil
}
