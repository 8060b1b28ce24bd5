package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/runner/live"
)

// presetsOptions are presets'.
type presetsOptions struct {
	f      *factory
	name   string
	output string
}

// newCmdPresets is `softalloc presets [NAME]`: what each of the live
// runner's presets reads and queries, so that nobody learns a preset from
// the Go source or from an error message.
func newCmdPresets(f *factory, runF func(*presetsOptions) error) *cobra.Command {
	o := &presetsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "presets [NAME]",
		Short: "List the live runner's query presets, or print one preset's queries",
		Long: `presets lists the query sets a deployment file's live runner section can start
from (runner.tiers.TIER.presets), one a line: its name, what it reads and the
exporter Prometheus must scrape for it.

With a NAME it prints that preset's PromQL queries (cpu, throttled, throughput,
responseTime, gcShare, pools.POOL.busy/size/fullShare, resources.NAME, oomKills,
memoryLimit), each with the unit the runner reads it in, and the placeholders
they use: {window}, {windowSeconds}, {tier}, {server} and {cores} are the
runner's; any other ({instance}, {node}) is a key the tier's servers entries must
set. A tier's own queries override the preset's, key by key.

--output markdown prints what docs/deployment.md lists. The deployment file's
keys: docs/deployment.md and docs/deployment.schema.json.`,
		Example: `  softalloc presets
  softalloc presets apache
  softalloc presets mysql --output json`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: live.PresetNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.name = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return runPresets(o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or markdown")
	return cmd
}

// presetJSON is one preset in `presets --output json`.
type presetJSON struct {
	Name         string             `json:"name"`
	Reads        string             `json:"reads"`
	Exporter     string             `json:"exporter"`
	Notes        string             `json:"notes,omitempty"`
	Placeholders []placeholderJSON  `json:"placeholders"`
	Queries      []live.PresetQuery `json:"queries"`
}

// placeholderJSON is a placeholder a preset's queries use; setBy is
// "runner" (the runner sets it) or "servers" (the tier's servers entries
// must).
type placeholderJSON struct {
	Name    string `json:"name"`
	SetBy   string `json:"setBy"`
	Meaning string `json:"meaning,omitempty"`
}

func describePreset(name string) presetJSON {
	q := live.Presets[name]
	p := presetJSON{Name: name, Reads: q.About.Reads, Exporter: q.About.Exporter, Notes: q.About.Notes,
		Placeholders: []placeholderJSON{}, Queries: q.List()}
	for _, ph := range q.Placeholders() {
		i := slices.IndexFunc(live.RunnerPlaceholders, func(r live.Placeholder) bool { return r.Name == ph })
		if i >= 0 {
			p.Placeholders = append(p.Placeholders, placeholderJSON{Name: ph, SetBy: "runner", Meaning: live.RunnerPlaceholders[i].Meaning})
		} else {
			p.Placeholders = append(p.Placeholders, placeholderJSON{Name: ph, SetBy: "servers"})
		}
	}
	return p
}

func runPresets(o *presetsOptions) error {
	if o.output != "table" && o.output != "json" && o.output != "markdown" {
		return usagef("--output %q: want table, json or markdown", o.output)
	}
	names := live.PresetNames()
	if o.name != "" && !slices.Contains(names, o.name) {
		return usagef("preset %q: unknown; want one of %s", o.name, strings.Join(names, ", "))
	}
	if o.name != "" {
		names = []string{o.name}
	}
	presets := make([]presetJSON, len(names))
	for i, n := range names {
		presets[i] = describePreset(n)
	}
	w := o.f.Out
	switch {
	case o.output == "json" && o.name != "":
		return report.WriteJSON(w, presets[0])
	case o.output == "json":
		return report.WriteJSON(w, presets)
	case o.output == "markdown":
		return writePresetsMarkdown(w, presets)
	case o.name != "":
		return writePreset(w, presets[0])
	}
	// What a preset reads and needs is a sentence each: two columns, not
	// three padded to the longest.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PRESET\tREADS; NEEDS")
	for _, p := range presets {
		fmt.Fprintf(tw, "%s\t%s; needs %s\n", p.Name, p.Reads, p.Exporter)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write presets: %w", err)
	}
	_, err := fmt.Fprintln(w, "\nsoftalloc presets NAME prints a preset's queries; docs/deployment.md lists them all.")
	return err
}

// writePreset prints one preset for a reader at a terminal.
func writePreset(w io.Writer, p presetJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", p.Name, p.Reads)
	fmt.Fprintf(&b, "needs: %s\n", p.Exporter)
	if p.Notes != "" {
		fmt.Fprintf(&b, "\n%s\n", presetWrap(p.Notes, 90, ""))
	}
	b.WriteString("\nqueries (a tier's own queries override these, key by key):\n")
	for _, q := range p.Queries {
		fmt.Fprintf(&b, "  %s  [%s]\n    %s\n", q.Key, q.Unit, q.Query)
	}
	b.WriteString("\nplaceholders:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, ph := range p.Placeholders {
		if ph.SetBy == "runner" {
			fmt.Fprintf(tw, "  {%s}\tset by the runner: %s\n", ph.Name, ph.Meaning)
		} else {
			fmt.Fprintf(tw, "  {%s}\tset by each entry of the tier's servers\n", ph.Name)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write preset %s: %w", p.Name, err)
	}
	fmt.Fprintf(&b, "\nin a deployment file's runner section:\n%s", presetIndent(presetExample(p), "  "))
	_, err := io.WriteString(w, b.String())
	return err
}

// presetExample is a runner section's tier using the preset, with the
// servers entries its placeholders need.
func presetExample(p presetJSON) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tiers:\n  TIER:\n    presets: [%s]\n", p.Name)
	var keys []string
	for _, ph := range p.Placeholders {
		if ph.SetBy == "servers" {
			keys = append(keys, ph.Name+": ...")
		}
	}
	if len(keys) > 0 {
		fmt.Fprintf(&b, "    servers: [{%s}]   # one entry per replica\n", strings.Join(keys, ", "))
	}
	return b.String()
}

// writePresetsMarkdown writes the presets as docs/deployment.md lists them.
func writePresetsMarkdown(w io.Writer, presets []presetJSON) error {
	var b strings.Builder
	b.WriteString("| Preset | Reads | Needs |\n|---|---|---|\n")
	for _, p := range presets {
		fmt.Fprintf(&b, "| [%s](#preset-%s) | %s | %s |\n", p.Name, p.Name, presetCell(p.Reads), presetCell(p.Exporter))
	}
	for _, p := range presets {
		fmt.Fprintf(&b, "\n<a id=\"preset-%s\"></a>\n#### %s\n\n%s. Needs %s.\n", p.Name, p.Name, presetSentence(p.Reads), p.Exporter)
		if p.Notes != "" {
			fmt.Fprintf(&b, "\n%s\n", p.Notes)
		}
		b.WriteString("\n| Key | Unit |\n|---|---|\n")
		for _, q := range p.Queries {
			fmt.Fprintf(&b, "| `%s` | %s |\n", q.Key, q.Unit)
		}
		b.WriteString("\n```yaml\n")
		for _, q := range p.Queries {
			fmt.Fprintf(&b, "%s: %s\n", q.Key, presetYAML(q.Query))
		}
		b.WriteString("```\n")
		var own, servers []string
		for _, ph := range p.Placeholders {
			if ph.SetBy == "runner" {
				own = append(own, "`{"+ph.Name+"}`")
			} else {
				servers = append(servers, "`{"+ph.Name+"}`")
			}
		}
		if len(servers) > 0 {
			fmt.Fprintf(&b, "\nEach servers entry sets %s.", strings.Join(servers, ", "))
		}
		if len(own) > 0 {
			fmt.Fprintf(&b, "\nThe runner sets %s.", strings.Join(own, ", "))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// presetYAML quotes a query as a YAML value: single quotes, which PromQL's
// braces, colons and double quotes need, with each ' doubled.
func presetYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func presetCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func presetSentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func presetIndent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// presetWrap breaks text into lines of at most width columns, each after the
// first starting with prefix.
func presetWrap(text string, width int, prefix string) string {
	var b strings.Builder
	col := 0
	for _, word := range strings.Fields(text) {
		if col > 0 && col+1+len(word) > width {
			b.WriteString("\n" + prefix)
			col = len(prefix)
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}
