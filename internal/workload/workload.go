// Package workload is the workload file that the simulator and the live
// runner share: emulated users walk a Markov chain of interactions (the
// RUBBoS client's transition tables, with Back and EndOfSession) and think
// once after every page.
//
// Parse is the one parser and validator. The simulator reads an
// interaction's static flag, images and queries (internal/sim calls a
// workload its mix); the live runner its path and embedded paths. Each
// walks the chain with its own random draws (the simulator's engine
// streams, the live runner's math/rand/v2), so that neither's numbers
// depend on the other's.
package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Workload is a workload file. The JSON of its fields is part of the
// simulator's identity in a journal (a model holds its mix): new fields must
// leave it unchanged when they are not used.
type Workload struct {
	// Name labels the workload.
	Name string `yaml:"name"`
	// ThinkTime is the users' think time after every page.
	ThinkTime ThinkTime `yaml:"thinkTime"`
	// SessionLength starts a new session after this many transitions
	// (0: never).
	SessionLength int `yaml:"sessionLength,omitempty"`
	// Start is the first page of every session.
	Start string `yaml:"start"`
	// QueriesPerServletPage, for the simulator, scales every interaction's
	// Queries so that the stationary mean per servlet (non-static) page is
	// this value (0: take Queries as they are). The paper measured 3.22 at
	// C-JDBC.
	QueriesPerServletPage float64 `yaml:"queriesPerServletPage,omitempty"`
	// Interactions are the states of the chain, the pages.
	Interactions []Interaction `yaml:"interactions"`

	start int
	pages []Page
}

// ThinkTime is negative exponential with Mean; a draw over Cap becomes 0
// (the TPC-W rule the RUBBoS client follows). Cap 0 means no cap.
type ThinkTime struct {
	Mean duration.Seconds `yaml:"mean"`
	Cap  duration.Seconds `yaml:"cap,omitempty"`
}

// Interaction is one page type.
type Interaction struct {
	Name string `yaml:"name"`
	// Path is the page's URL path and query, for the live runner, which
	// joins it to its target. It may hold {rand:LO:HI} (a uniform integer)
	// and {pick:a|b|c} (one of the words), drawn anew for each request.
	Path string `yaml:"path,omitempty" json:",omitempty"`
	// Embedded are paths fetched after the page, one after another, each
	// on a new connection (images); the page's response time ends with the
	// last of them.
	Embedded []string `yaml:"embedded,omitempty" json:",omitempty"`
	// Static pages are served by the web tier alone (for the simulator).
	Static bool `yaml:"static,omitempty"`
	// Images is the number of embedded requests, for a workload without
	// Embedded paths (the simulator's mixes); with them it is their count.
	Images int `yaml:"images,omitempty"`
	// Queries is the SQL queries of one page, for the simulator: relative
	// to the other interactions when QueriesPerServletPage scales them. A
	// fractional count q gives floor(q) or floor(q)+1 queries with mean q.
	Queries float64 `yaml:"queries,omitempty"`
	// Next lists the transitions in order: interaction names, "Back" (to the
	// previous page) or "EndOfSession" (a new session at Start), with their
	// probabilities. What is missing to 1 stays on the same page; a sum over
	// 1 is normalised.
	Next Transitions `yaml:"next"`
}

// ImageCount is the number of embedded requests after the page: the
// embedded paths, or Images without them.
func (it *Interaction) ImageCount() int {
	if len(it.Embedded) > 0 {
		return len(it.Embedded)
	}
	return it.Images
}

// Transition is one way out of an interaction.
type Transition struct {
	To string
	P  float64
}

// Transitions keeps the order of a YAML mapping, so that the cumulative
// probabilities (and every draw) do not depend on map iteration.
type Transitions []Transition

// UnmarshalYAML reads a mapping of name: probability.
func (t *Transitions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return typeError("line %d: want a mapping of interaction: probability", n.Line)
	}
	out := make(Transitions, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p, err := strconv.ParseFloat(v.Value, 64)
		if err != nil || !(p >= 0) || math.IsInf(p, 0) { // ParseFloat reads "nan"
			return typeError("line %d: %s: want a probability >= 0, got %q", v.Line, k.Value, v.Value)
		}
		out = append(out, Transition{To: k.Value, P: p})
	}
	*t = out
	return nil
}

// MarshalYAML writes the mapping in its order.
func (t Transitions) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, tr := range t {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: tr.To},
			&yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(tr.P, 'g', -1, 64)})
	}
	return n, nil
}

// typeError is an error yaml.v3 collects with the others of a document, so
// that oneline.DecodeYAML can name its field.
func typeError(format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf(format, args...)}}
}

// The pseudo-states of the transition tables, by name and as a Page's target.
const (
	StateBack         = "Back"
	StateEndOfSession = "EndOfSession"
	ToBack            = -1
	ToEndOfSession    = -2
)

// Bounds of a workload: the simulator keeps a user's page, image count and
// steps in a session in a byte or two.
const (
	MaxInteractions  = 250
	MaxImages        = 255
	MaxSessionLength = math.MaxUint16
)

// Page is an interaction compiled for the walkers: targets resolved to
// indexes, probabilities made cumulative, paths parsed.
type Page struct {
	// Cum and To are the transitions in file order: a uniform draw x in
	// [0, 1) moves the user to To[j] for the first j with x < Cum[j] (an
	// interaction's index, ToBack or ToEndOfSession); past the last, the
	// user stays.
	Cum []float64
	To  []int16
	// Path is nil when the interaction has none (a workload for the
	// simulator only).
	Path     *Template
	Embedded []*Template
}

// StartIndex is the index of the Start interaction.
func (w *Workload) StartIndex() int { return w.start }

// Page is interaction i compiled.
func (w *Workload) Page(i int) *Page { return &w.pages[i] }

// ErrEmpty is the error of a file with no document in it; the message
// names what one holds.
var ErrEmpty = errors.New("the file is empty; want a workload: thinkTime, start and interactions (name, path, next), as in testbed/workload.yaml")

// Load reads and checks a workload file.
func Load(path string) (*Workload, error) {
	b, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("load workload %q: %w", path, err)
	}
	w, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("load workload %q: %w", path, err)
	}
	return w, nil
}

// Parse reads and checks a workload file's contents: strictly (an unknown
// key, a NaN or infinite number, a bound crossed is an error naming the
// field, the bad value and what is wanted), so that both walkers can trust
// what it returns.
func Parse(b []byte) (*Workload, error) {
	w := &Workload{}
	if err := oneline.DecodeYAML(b, w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmpty
		}
		return nil, err
	}
	if err := w.compile(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Workload) compile() error {
	tt := w.ThinkTime
	switch {
	case len(w.Interactions) == 0:
		return errors.New("interactions: want at least one")
	case len(w.Interactions) > MaxInteractions:
		return fmt.Errorf("interactions: want at most %d, got %d", MaxInteractions, len(w.Interactions))
	case !tt.Mean.IsTimeout() || !tt.Cap.IsTimeout():
		// An infinite mean times a zero draw is a NaN think time, and the
		// live runner sleeps a time.Duration.
		return fmt.Errorf("thinkTime: want a mean and a cap >= 0 and under 292 years, got %g and %g seconds", float64(tt.Mean), float64(tt.Cap))
	case w.SessionLength < 0 || w.SessionLength > MaxSessionLength:
		return fmt.Errorf("sessionLength: want an integer in [0,%d], got %d", MaxSessionLength, w.SessionLength)
	case !(w.QueriesPerServletPage >= 0) || math.IsInf(w.QueriesPerServletPage, 0):
		return fmt.Errorf("queriesPerServletPage: want a finite number >= 0, got %g", w.QueriesPerServletPage)
	}
	index := map[string]int{}
	for i, it := range w.Interactions {
		// The name goes into the field paths of the messages below.
		if it.Name == "" || it.Name == StateBack || it.Name == StateEndOfSession || strings.IndexFunc(it.Name, unicode.IsControl) >= 0 {
			return fmt.Errorf("interactions[%d].name: want a name other than %q, %q and empty, without control characters, got %q",
				i, StateBack, StateEndOfSession, it.Name)
		}
		if _, dup := index[it.Name]; dup {
			return fmt.Errorf("interactions[%d].name: %q appears twice", i, it.Name)
		}
		index[it.Name] = i
	}
	start, ok := index[w.Start]
	if !ok {
		return fmt.Errorf("start: no interaction named %q", w.Start)
	}
	w.start = start
	w.pages = make([]Page, len(w.Interactions))
	for i := range w.Interactions {
		if err := w.compilePage(i, index); err != nil {
			return err
		}
	}
	return nil
}

// compilePage checks interaction i and compiles it into w.pages[i].
func (w *Workload) compilePage(i int, index map[string]int) error {
	it := &w.Interactions[i]
	f := fmt.Sprintf("interactions[%d] (%s)", i, it.Name)
	p := &w.pages[i]
	switch {
	case it.Images < 0 || it.Images > MaxImages:
		return fmt.Errorf("%s.images: want an integer in [0,%d], got %d", f, MaxImages, it.Images)
	case len(it.Embedded) > MaxImages:
		return fmt.Errorf("%s.embedded: want at most %d paths, got %d", f, MaxImages, len(it.Embedded))
	case it.Images > 0 && len(it.Embedded) > 0 && it.Images != len(it.Embedded):
		return fmt.Errorf("%s.images: %d, but embedded lists %d paths; give one of them, or the same count", f, it.Images, len(it.Embedded))
	case !(it.Queries >= 0) || math.IsInf(it.Queries, 0):
		return fmt.Errorf("%s.queries: want a number >= 0, got %g", f, it.Queries)
	}
	var err error
	if it.Path != "" {
		if p.Path, err = ParseTemplate(it.Path); err != nil {
			return fmt.Errorf("%s.path: %w", f, err)
		}
	}
	for j, e := range it.Embedded {
		t, err := ParseTemplate(e)
		if err != nil {
			return fmt.Errorf("%s.embedded[%d]: %w", f, j, err)
		}
		p.Embedded = append(p.Embedded, t)
	}
	var sum float64
	for _, t := range it.Next {
		sum += t.P
	}
	norm := 1.0
	if sum > 1 {
		norm = 1 / sum
	}
	var cum float64
	for _, t := range it.Next {
		var to int16
		switch t.To {
		case StateBack:
			to = ToBack
		case StateEndOfSession:
			to = ToEndOfSession
		default:
			j, ok := index[t.To]
			if !ok {
				return fmt.Errorf("%s.next.%s: no interaction of that name", f, oneline.Escape(t.To))
			}
			to = int16(j)
		}
		cum += t.P * norm
		p.Cum = append(p.Cum, cum)
		p.To = append(p.To, to)
	}
	return nil
}
