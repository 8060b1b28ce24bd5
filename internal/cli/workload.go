package cli

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/softalloc/softalloc/internal/accesslog"
	"github.com/softalloc/softalloc/internal/safefile"
	"github.com/softalloc/softalloc/internal/version"
)

// workloadOptions are workload's.
type workloadOptions struct {
	f             *factory
	logs          []string
	format        string
	unit          string
	idleGap       time.Duration
	ends          string
	write         string
	output        string
	name          string
	templates     []string
	pageExt       []string
	exclude       []string
	sample        int
	maxQueryWords int
	maxPathWords  int
}

// newCmdWorkload is `softalloc workload --from-log`: a workload file
// inferred from a web server's access log.
func newCmdWorkload(f *factory, runF func(*workloadOptions) error) *cobra.Command {
	o := &workloadOptions{f: f}
	cmd := &cobra.Command{
		Use:   "workload --from-log access.log",
		Short: "Infer a workload file (pages, mix, transitions, think time) from an access log",
		Long: `workload reads a web server's access log and writes the workload that produced it,
as a workload file the live runner's load generator and the Locust adapter replay
(the format of testbed/workload.yaml).

Logs: Apache's and nginx's common and combined formats, each optionally followed
by the request's duration, then anything (ignored). Best, for Apache:
` + indent(accesslog.ApacheLogConfig("${APACHE_LOG_DIR}/access.log"), "  ") + `(%D is in microseconds; the time's milliseconds make short think times exact).
Plain combined with %D works too, or with %T and --duration-unit s. nginx:
` + indent(accesslog.NginxLogConfig("/var/log/nginx/access.log"), "  ") + `([$time_local] and [$time_iso8601] work too, to the second; nginx logs a
request's end: its start is the time less $request_time).
--format auto takes a log whose durations have a decimal point for nginx's.
Files ending in .gz are read through gzip; - is standard input. Lines that are
not log lines are counted and the first ones named; only a log of mostly bad
lines fails.

What is inferred:
  pages       GET requests answered 2xx, 304 or 5xx, for a path without an
              extension or with a page's (html, php, jsp ...; --page-ext adds
              some). Other GETs are assets: those fetched after at least half
              of a page's views are its embedded requests. Monitoring endpoints
              (/server-status, /metrics, /healthz ...) and --exclude are left out.
  templates   numeric ids, UUIDs, hex hashes and path slugs become parameters,
              and so does a query key or path segment holding more distinct
              words than --max-query-words or --max-path-words (search terms);
              the other words tell pages apart (Search?type=stories and
              Search?type=users). A parameter is drawn from the log's values:
              {rand:LO:HI} for ids that seldom repeat, {pick:...} of a sample of
              --sample values otherwise. --template gives a template yourself.
  sessions    by client address and user agent, ended by --idle-gap.
  transitions between consecutive pages of a session; a session's exit goes to
              an entry page as the log's sessions entered (EndOfSession for the
              most common entry, the workload's start), so the mix is the log's.
              A load test's log: its trials cut the sessions, and --ends cut
              leaves the cuts out (else trials of a few dozen pages a user send
              the chain back to the start too often: 3 points of mix).
  think time  from the end of a page and its assets (the time plus the
              duration) to the session's next page; written as the workload
              format's exponential with the measured mean (the summary gives the
              median and the coefficient of variation, 1 for an exponential).

A load generator's log tells its users apart only if they differ in address or
user agent (softalloc's own load generator and Locust's users share both).

The workload goes to --write FILE, or standard output; the summary to standard
error, or standard output as JSON with --output json (then --write is needed).`,
		Example: `  softalloc workload --from-log /var/log/apache2/access.log --write workload.yaml
  softalloc workload --from-log access.log.2.gz --from-log access.log.1 --from-log access.log \
    -w workload.yaml
  softalloc workload --from-log access.log --format nginx --idle-gap 10m -w workload.yaml -o json
  softalloc workload --from-log load-test.log --ends cut -w workload.yaml
  softalloc workload --from-log access.log --template '/product/{id}' --template '/search?q={q}' \
    -w workload.yaml
  zcat access.log.*.gz | softalloc workload --from-log - > workload.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return runWorkload(o)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.logs, "from-log", nil, "access log to read (repeat for rotated logs, oldest first; .gz read through gzip; - for stdin)")
	fs.StringVar(&o.format, "format", "auto", "log format: auto, combined (Apache's combined or common) or nginx")
	fs.StringVar(&o.unit, "duration-unit", "auto", "unit of the duration after the user agent: auto (a decimal point: seconds; an integer: microseconds), us, ms or s")
	fs.DurationVar(&o.idleGap, "idle-gap", 30*time.Minute, "a client idle this long starts a new session")
	fs.StringVar(&o.ends, "ends", "exit", "a session's end: exit (the user left: on to an entry page) or cut (a load test's trial ended: left out)")
	fs.StringVarP(&o.write, "write", "w", "", "write the workload file here (default: standard output)")
	fs.StringVarP(&o.output, "output", "o", "table", "summary format: table (on stderr) or json (on stdout)")
	fs.StringVar(&o.name, "name", "", "the workload's name (default: from the log's file name)")
	fs.StringArrayVar(&o.templates, "template", nil, "a page template, tried before the inferred ones: {name} is a parameter segment or query value, e.g. /shop/{category}/{item} (repeatable)")
	fs.StringSliceVar(&o.pageExt, "page-ext", nil, "more extensions of pages, besides none and "+strings.Join(accesslog.DefaultPageExtensions, ","))
	fs.StringArrayVar(&o.exclude, "exclude", nil, "leave out requests whose path and query match this regular expression (repeatable; monitoring endpoints are left out already)")
	fs.IntVar(&o.sample, "sample", 100, "values of each parameter kept to draw from")
	fs.IntVar(&o.maxQueryWords, "max-query-words", 10, "a query key with more distinct words than this is a parameter")
	fs.IntVar(&o.maxPathWords, "max-path-words", 25, "a path segment with more distinct words than this (after the same segments) is a parameter")
	return cmd
}

func (o *workloadOptions) inferOptions() (accesslog.Options, accesslog.Unit, error) {
	var ao accesslog.Options
	if len(o.logs) == 0 {
		return ao, 0, usagef("workload: want --from-log FILE (an Apache or nginx access log; see softalloc workload --help)")
	}
	if o.output != "table" && o.output != "json" {
		return ao, 0, usagef("--output: want table or json, got %q", o.output)
	}
	if o.output == "json" && (o.write == "" || o.write == "-") {
		return ao, 0, usagef("--output json prints the summary on standard output: give the workload a file with --write FILE")
	}
	format, err := accesslog.ParseFormat(o.format)
	if err != nil {
		return ao, 0, usagef("--format: %v", err)
	}
	unit, err := accesslog.ParseUnit(o.unit)
	if err != nil {
		return ao, 0, usagef("--duration-unit: %v", err)
	}
	if o.ends != "exit" && o.ends != "cut" {
		return ao, 0, usagef("--ends: want exit (users left) or cut (a load test's trials ended the sessions), got %q", o.ends)
	}
	switch {
	case o.idleGap <= 0:
		return ao, 0, usagef("--idle-gap: want a duration > 0 such as 30m, got %s", o.idleGap)
	case o.sample < 1 || o.sample > 10000:
		return ao, 0, usagef("--sample: want an integer in [1,10000], got %d", o.sample)
	case o.maxQueryWords < 1:
		return ao, 0, usagef("--max-query-words: want an integer >= 1, got %d", o.maxQueryWords)
	case o.maxPathWords < 1:
		return ao, 0, usagef("--max-path-words: want an integer >= 1, got %d", o.maxPathWords)
	}
	ao = accesslog.Options{Format: format, IdleGap: o.idleGap, Sample: o.sample,
		MaxQueryWords: o.maxQueryWords, MaxPathWords: o.maxPathWords, CutEnds: o.ends == "cut"}
	for _, t := range o.templates {
		p, err := accesslog.ParsePattern(t)
		if err != nil {
			return ao, 0, usagef("--template: %v", err)
		}
		ao.Templates = append(ao.Templates, p)
	}
	if len(o.pageExt) > 0 {
		ao.PageExtensions = append(append([]string(nil), accesslog.DefaultPageExtensions...), o.pageExt...)
	}
	if len(o.exclude) > 0 {
		ao.Exclude = append([]*regexp.Regexp(nil), accesslog.DefaultExclude...)
		for _, x := range o.exclude {
			re, err := regexp.Compile(x)
			if err != nil {
				return ao, 0, usagef("--exclude %q: want a regular expression: %v", x, err)
			}
			ao.Exclude = append(ao.Exclude, re)
		}
	}
	return ao, unit, nil
}

func runWorkload(o *workloadOptions) error {
	s := o.f.Streams
	ao, unit, err := o.inferOptions()
	if err != nil {
		return err
	}
	if o.write != "" && o.write != "-" {
		if err := safefile.CheckWritable(o.write); err != nil {
			return usagef("--write: %v", err)
		}
	}
	in := accesslog.NewInferrer(ao)
	var lines, bad, blank int64
	var firstBad []accesslog.BadLine
	for _, path := range o.logs {
		r, closeLog, err := openLog(path, s.In)
		if err != nil {
			return configError(fmt.Errorf("--from-log: %w", err))
		}
		lr := accesslog.NewReader(r, unit)
		for {
			e, ok := lr.Next()
			if !ok {
				break
			}
			in.Add(e)
		}
		closeLog()
		if err := lr.Err(); err != nil {
			return fmt.Errorf("--from-log %q: %w", path, err)
		}
		lines, bad, blank = lines+lr.Lines, bad+lr.Bad, blank+lr.Blank
		for _, b := range lr.FirstBad {
			if len(firstBad) < 5 {
				b.File = path
				firstBad = append(firstBad, b)
			}
		}
	}
	if read := lines - blank; read == 0 || 2*bad > read {
		return configError(fmt.Errorf("--from-log: %d of %d lines are not access log lines (%s); want Apache's or nginx's common or combined format, see softalloc workload --help",
			bad, read, describeBad(firstBad)))
	}
	name := o.name
	if name == "" {
		name = "from-log"
		if l := o.logs[len(o.logs)-1]; l != "-" {
			name = "from-log " + filepath.Base(l)
		}
	}
	res, err := in.Finish(name)
	if err != nil {
		if errors.Is(err, accesslog.ErrNoPages) {
			return configError(fmt.Errorf("--from-log: %w", err))
		}
		return fmt.Errorf("workload: %w", err)
	}
	written := "stdout"
	if o.write == "" || o.write == "-" {
		if _, err := s.Out.Write(res.YAML); err != nil {
			return fmt.Errorf("write the workload: %w", err)
		}
	} else {
		if err := safefile.Write(o.write, 0o644, func(w io.Writer) error { _, err := w.Write(res.YAML); return err }); err != nil {
			return fmt.Errorf("write the workload: %w", err)
		}
		written = o.write
	}
	if o.output == "json" {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(workloadSummaryJSON{Lines: lines, BadLines: bad, FirstBad: firstBad, Files: o.logs,
			Written: written, Summary: res.Summary, Version: version.String()})
	}
	return writeWorkloadSummary(s.Err, lines, bad, firstBad, written, &res.Summary)
}

// workloadSummaryJSON is workload's --output json.
type workloadSummaryJSON struct {
	Files    []string            `json:"files"`
	Lines    int64               `json:"lines"`
	BadLines int64               `json:"badLines"`
	FirstBad []accesslog.BadLine `json:"firstBad,omitempty"`
	// Written is the workload file's path, or stdout.
	Written string            `json:"written"`
	Summary accesslog.Summary `json:"summary"`
	Version string            `json:"version"`
}

// indent puts prefix before each line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

func describeBad(bad []accesslog.BadLine) string {
	if len(bad) == 0 {
		return "no line read"
	}
	var parts []string
	for _, b := range bad {
		parts = append(parts, fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Err))
	}
	return strings.Join(parts, "; ")
}

// openLog opens a log, through gzip when it is compressed (a rotated log).
func openLog(path string, stdin io.Reader) (io.Reader, func(), error) {
	var r io.Reader = stdin
	closeLog := func() {}
	if path != "-" {
		if err := safefile.CheckRegular(path); err != nil {
			return nil, nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		r, closeLog = f, func() { f.Close() }
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			closeLog()
			return nil, nil, fmt.Errorf("%q: %w", path, err)
		}
		return z, closeLog, nil
	}
	return br, closeLog, nil
}

func writeWorkloadSummary(w io.Writer, lines, bad int64, firstBad []accesslog.BadLine, written string, s *accesslog.Summary) error {
	fmt.Fprintf(w, "log: %d lines, %s times", lines, s.Format)
	if s.Durations {
		fmt.Fprint(w, ", with durations")
	} else {
		fmt.Fprint(w, ", without durations")
	}
	if bad > 0 {
		fmt.Fprintf(w, "; %d bad (%s)", bad, describeBad(firstBad))
	}
	fmt.Fprintf(w, "\nrequests: %d pages, %d assets, %d excluded, %d other\n", s.Pages, s.Assets, s.Excluded, s.Other)
	fmt.Fprintf(w, "sessions: %d, %.1f pages each; start %s\n", s.Sessions, s.PagesPerSession, s.Start)
	t := s.ThinkTime
	fmt.Fprintf(w, "think time: mean %.3f s (written, exponential), median %.3f s, p90 %.3f s, cv %.2f, over %d gaps\n",
		t.Mean, t.Median, t.P90, t.CV, t.Count)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEMPLATE\tSHARE\tVIEWS\tENTRIES\tEXITS\tEMBEDDED")
	for _, tp := range s.Templates {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%d\t%d\t%d\t%d\n", tp.Name, 100*tp.Share, tp.Views, tp.Entries, tp.Exits, len(tp.Embedded))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, x := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
	_, err := fmt.Fprintf(w, "wrote %s (%d interactions)\n", written, len(s.Templates))
	return err
}
