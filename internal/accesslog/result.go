package accesslog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/workload"
)

// Result is an inferred workload.
type Result struct {
	// YAML is the workload file, commented.
	YAML []byte
	// Workload is YAML parsed, as the load generator reads it.
	Workload *workload.Workload
	Summary  Summary
}

// Summary says what the log held and what was inferred from it.
type Summary struct {
	// Format is how the times were read: apache (the time is the request's
	// arrival) or nginx (its end).
	Format string `json:"format"`
	// Durations says whether the log had the requests' durations.
	Durations bool `json:"durations"`
	Counts
	PagesPerSession float64           `json:"pagesPerSession"`
	Start           string            `json:"start"`
	ThinkTime       ThinkSummary      `json:"thinkTime"`
	Templates       []TemplateSummary `json:"templates"`
	Warnings        []string          `json:"warnings,omitempty"`
}

// ThinkSummary describes the think times measured: the gap between the end
// of a page (and of the assets fetched after it) and the session's next page.
type ThinkSummary struct {
	Count int64 `json:"count"`
	// Mean, Median, P90 and StdDev are in seconds; CV is StdDev/Mean (1 for
	// the exponential the workload file's think time is).
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	StdDev float64 `json:"stdDev"`
	CV     float64 `json:"cv"`
	// Negative gaps come from times logged to the second; they are kept,
	// so that the mean stays unbiased.
	Negative int64 `json:"negative"`
}

// TemplateSummary is one page template.
type TemplateSummary struct {
	Name string `json:"name"`
	// Path is the workload's path, with its parameters' placeholders.
	Path     string   `json:"path"`
	Views    int64    `json:"views"`
	Share    float64  `json:"share"`
	Entries  int64    `json:"entries"`
	Exits    int64    `json:"exits"`
	Embedded []string `json:"embedded,omitempty"`
}

// ErrNoPages is a log without a page.
var ErrNoPages = errors.New("no pages in the log: want GET requests with a 2xx, 304 or 5xx status for paths without an extension or with a page's (--page-ext)")

// Finish ends every session and writes the workload named name.
func (in *Inferrer) Finish(name string) (*Result, error) {
	keys := make([]string, 0, len(in.sessions))
	for k := range in.sessions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		in.closeSession(in.sessions[k])
	}
	in.sessions = map[string]*session{}
	if in.counts.Pages == 0 {
		return nil, ErrNoPages
	}
	finals := in.finals()
	slices.SortStableFunc(finals, func(a, b *finalTemplate) int {
		if a.views != b.views {
			if a.views > b.views {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	idx := make([]int, len(in.list))
	for i, f := range finals {
		for _, r := range f.raws {
			idx[r.id] = i
		}
		in.render(f)
	}
	names := map[string]int{}
	for _, f := range finals {
		// Names are the templates; two could read the same with their
		// parameters as "*" (a literal "*").
		if names[f.name]++; names[f.name] > 1 {
			f.name = fmt.Sprintf("%s #%d", f.name, names[f.name])
		}
	}
	var totalEntries int64
	for k, n := range in.trans {
		switch {
		case k[0] == entryState:
			finals[idx[k[1]]].entries += n
			totalEntries += n
		case k[1] == exitState:
			finals[idx[k[0]]].exits += n
		default:
			finals[idx[k[0]]].out[idx[k[1]]] += n
		}
	}
	start := 0
	for i, f := range finals {
		if f.entries > finals[start].entries {
			start = i
		}
	}
	w := &workload.Workload{Name: name, Start: finals[start].name}
	sum := Summary{Format: in.format.String(), Durations: in.durations, Counts: in.counts, Start: w.Start}
	if in.format == FormatAuto {
		sum.Format = FormatApache.String()
	}
	for i, f := range finals {
		w.Interactions = append(w.Interactions, workload.Interaction{
			Name: f.name, Path: f.path, Embedded: f.embed, Next: in.next(finals, i, start, totalEntries)})
		sum.Templates = append(sum.Templates, TemplateSummary{Name: f.name, Path: f.path, Views: f.views,
			Share: float64(f.views) / float64(in.counts.Pages), Entries: f.entries, Exits: f.exits, Embedded: f.embed})
	}
	if len(w.Interactions) > workload.MaxInteractions {
		return nil, fmt.Errorf("%d page templates, more than a workload holds (%d): give --template patterns that group them, or lower --max-query-words and --max-path-words",
			len(w.Interactions), workload.MaxInteractions)
	}
	sum.ThinkTime = in.think.summary()
	w.ThinkTime.Mean = duration.Seconds(math.Round(max(0, sum.ThinkTime.Mean)*1e4) / 1e4)
	if in.counts.Sessions > 0 {
		sum.PagesPerSession = float64(in.counts.Pages) / float64(in.counts.Sessions)
	}
	sum.Warnings = in.warnings(&sum)
	b, err := marshal(w, &sum, in.o.CutEnds)
	if err != nil {
		return nil, err
	}
	parsed, err := workload.Parse(b)
	if err != nil {
		// A bug here, not in the log: say what was written.
		return nil, fmt.Errorf("the inferred workload does not parse: %w", err)
	}
	return &Result{YAML: b, Workload: parsed, Summary: sum}, nil
}

// next is template i's transitions. A session's exit goes to an entry page
// drawn as the log's sessions entered, so that the chain keeps the log's
// mix: EndOfSession for the start page (the load generator's new session
// begins there), a direct move for the other entry pages (a new session
// differs from a move only in its Back history, which an inferred workload
// does not use).
func (in *Inferrer) next(finals []*finalTemplate, i, start int, totalEntries int64) workload.Transitions {
	f := finals[i]
	var nOut int64 = f.exits
	for _, n := range f.out {
		nOut += n
	}
	p := make([]float64, len(finals))
	for j, n := range f.out {
		p[j] += float64(n)
	}
	var end float64
	if in.o.CutEnds && nOut > f.exits {
		// A page only ever seen last still needs a way out: its exits.
		nOut -= f.exits
	} else if totalEntries > 0 && f.exits > 0 {
		for j, g := range finals {
			x := float64(f.exits) * float64(g.entries) / float64(totalEntries)
			if j == start {
				end = x
			} else {
				p[j] += x
			}
		}
	}
	var tr workload.Transitions
	for j := range finals {
		if v := round6(p[j] / float64(nOut)); v > 0 {
			tr = append(tr, workload.Transition{To: finals[j].name, P: v})
		}
	}
	slices.SortStableFunc(tr, func(a, b workload.Transition) int { return cmpFloat(b.P, a.P, "", "") })
	if v := round6(end / float64(nOut)); v > 0 {
		tr = append(tr, workload.Transition{To: workload.StateEndOfSession, P: v})
	}
	return tr
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func (t *thinkStats) summary() ThinkSummary {
	s := ThinkSummary{Count: t.n, Negative: t.negative}
	if t.n == 0 {
		return s
	}
	s.Mean = t.sum / float64(t.n)
	if t.n > 1 {
		s.StdDev = math.Sqrt(max(0, (t.sumSq-float64(t.n)*s.Mean*s.Mean)/float64(t.n-1)))
	}
	if s.Mean > 0 {
		s.CV = s.StdDev / s.Mean
	}
	xs := slices.Clone(t.vals)
	slices.Sort(xs)
	s.Median, s.P90 = quantile(xs, 0.5), quantile(xs, 0.9)
	return s
}

func (in *Inferrer) warnings(s *Summary) []string {
	var w []string
	if !s.Durations {
		w = append(w, "the log has no durations: each think time includes the server's time for the page before it "+
			"(Apache: add %D to the LogFormat; nginx: $request_time to the log_format)")
	}
	if s.ThinkTime.Count == 0 {
		w = append(w, "no session has two pages: no think time was measured (0 written); is --idle-gap too short?")
	}
	if n := s.ThinkTime.Count; n > 0 && float64(s.ThinkTime.Negative) > 0.05*float64(n) {
		w = append(w, fmt.Sprintf("%d of %d think times are negative: the log's times are to the second; "+
			"the mean is still unbiased, but for quantiles log fractions of a second (Apache: %%{msec_frac}t)", s.ThinkTime.Negative, n))
	}
	if s.ThinkTime.Count >= 100 && (s.ThinkTime.CV < 0.7 || s.ThinkTime.CV > 1.5) {
		w = append(w, fmt.Sprintf("the think times' coefficient of variation is %.2f; the workload file's think time is "+
			"exponential (1): the mean is kept, the spread is not", s.ThinkTime.CV))
	}
	if s.Sessions > 0 && s.Sessions <= 3 && s.PagesPerSession > 1000 {
		w = append(w, fmt.Sprintf("%d sessions hold %d pages: if a load generator made this log, its users share one client "+
			"address and user agent, and their sessions cannot be told apart (the mix stays right; the transitions and think times do not)", s.Sessions, s.Pages))
	}
	return w
}

// marshal writes the workload with a header saying where it came from.
func marshal(w *workload.Workload, s *Summary, cut bool) ([]byte, error) {
	ends := fmt.Sprintf("a session's\n# exit goes to an entry page as the log's sessions entered (EndOfSession for\n# %q, the most common entry).", s.Start)
	if cut {
		ends = fmt.Sprintf("sessions'\n# ends were taken for cuts (--ends cut) and left out; sessions start at %q.", s.Start)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `# Inferred by softalloc workload --from-log from %d pages in %d sessions
# (%s log, durations: %v). Templates are the log's page types, most viewed
# first; {rand:LO:HI} and {pick:...} draw each parameter from the values the
# log held. Transitions are the sessions' moves between templates; %s
# The think time is exponential with the measured mean (%.3f s over %d gaps;
# median %.3f s, CV %.2f).
`, s.Pages, s.Sessions, s.Format, s.Durations, ends, s.ThinkTime.Mean, s.ThinkTime.Count, s.ThinkTime.Median, s.ThinkTime.CV)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("write the workload: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write the workload: %w", err)
	}
	return buf.Bytes(), nil
}
