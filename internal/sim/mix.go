package sim

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
	"github.com/softalloc/softalloc/internal/sim/engine"
)

// Mix is a workload mix of emulated users, as the RUBBoS client runs it: a
// Markov chain over interactions with a history stack for Back, one think
// time per page.
type Mix struct {
	// Name labels the mix.
	Name string `yaml:"name"`
	// ThinkTime is the user's think time between pages.
	ThinkTime ThinkTime `yaml:"thinkTime"`
	// SessionLength ends a session after this many transitions (0: never).
	SessionLength int `yaml:"sessionLength"`
	// Start is the first page of every session.
	Start string `yaml:"start"`
	// QueriesPerServletPage scales every interaction's Queries so that the
	// stationary mean per servlet page is this value (0: take Queries as they
	// are). The paper measured 3.22 at C-JDBC.
	QueriesPerServletPage float64 `yaml:"queriesPerServletPage"`
	// Interactions are the states of the chain.
	Interactions []Interaction `yaml:"interactions"`

	states []mixState
	start  int
	shares []float64 // stationary share of pages per interaction
}

// ThinkTime is negative exponential with Mean; a draw over Cap becomes 0
// (the TPC-W rule the RUBBoS client follows). Cap 0 means no cap.
type ThinkTime struct {
	Mean duration.Seconds `yaml:"mean"`
	Cap  duration.Seconds `yaml:"cap"`
}

// Interaction is one page type.
type Interaction struct {
	Name string `yaml:"name"`
	// Static pages are served by the web tier alone.
	Static bool `yaml:"static"`
	// Images is the number of embedded static requests the client fetches
	// after the page, one after another, each on a new connection.
	Images int `yaml:"images"`
	// Queries is the SQL queries of one page, relative to the other
	// interactions when QueriesPerServletPage scales them. A fractional
	// count q gives floor(q) or floor(q)+1 queries with mean q.
	Queries float64 `yaml:"queries"`
	// Next lists the transitions in order: interaction names, "Back" (pop
	// the history) or "EndOfSession" (a new session at Start), with their
	// probabilities. What is missing to 1 stays on the same page; a sum over
	// 1 is normalised.
	Next Transitions `yaml:"next"`
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

// Pseudo-states of the transition tables.
const (
	StateBack         = "Back"
	StateEndOfSession = "EndOfSession"
	toBack            = -1
	toEnd             = -2
)

type mixState struct {
	static bool
	images uint8
	q      float64   // mean SQL queries of one page, scaled
	cum    []float64 // cumulative transition probabilities
	to     []int16   // target index, toBack or toEnd
}

// histDepth bounds the Back history of a user. A deeper history only matters
// after that many consecutive Backs, which the tables make vanishingly rare,
// and the bound keeps memory a constant per user.
const histDepth = 16

// nav is one user's position in the chain.
type nav struct {
	state uint8
	hlen  uint8
	hist  [histDepth]uint8 // ring of previous states, newest at hlen-1
	steps uint16           // transitions in this session
}

// Shares is the stationary share of pages of each interaction, in file order.
func (mx *Mix) Shares() []float64 { return append([]float64(nil), mx.shares...) }

// QueryMean is the mean SQL queries per page of an interaction after scaling.
func (mx *Mix) QueryMean(i int) float64 { return mx.states[i].q }

func parseMix(b []byte, name string) (*Mix, error) {
	mx := &Mix{}
	if err := oneline.DecodeYAML(b, mx); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("load mix %q: the file is empty; want a workload mix: thinkTime, start and interactions (as in internal/sim/rubbos-browse-only.yaml)", name)
		}
		return nil, fmt.Errorf("load mix %q: %w", name, err)
	}
	if err := mx.compile(); err != nil {
		return nil, fmt.Errorf("load mix %q: %w", name, err)
	}
	return mx, nil
}

func (mx *Mix) compile() error {
	switch {
	case len(mx.Interactions) == 0:
		return fmt.Errorf("interactions: want at least one")
	case len(mx.Interactions) > 250:
		return fmt.Errorf("interactions: want at most 250, got %d", len(mx.Interactions))
	case !(mx.ThinkTime.Mean >= 0) || math.IsInf(float64(mx.ThinkTime.Mean), 0) || !(mx.ThinkTime.Cap >= 0):
		// An infinite mean times a zero draw is a NaN think time.
		return fmt.Errorf("thinkTime: want a finite mean and a cap >= 0, got %g and %g", mx.ThinkTime.Mean, mx.ThinkTime.Cap)
	case mx.SessionLength < 0 || mx.SessionLength > math.MaxUint16:
		return fmt.Errorf("sessionLength: want an integer in [0,%d], got %d", math.MaxUint16, mx.SessionLength)
	case !(mx.QueriesPerServletPage >= 0):
		return fmt.Errorf("queriesPerServletPage: want a number >= 0, got %g", mx.QueriesPerServletPage)
	}
	index := map[string]int{}
	for i, it := range mx.Interactions {
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
	start, ok := index[mx.Start]
	if !ok {
		return fmt.Errorf("start: no interaction named %q", mx.Start)
	}
	mx.start = start
	mx.states = make([]mixState, len(mx.Interactions))
	for i, it := range mx.Interactions {
		f := fmt.Sprintf("interactions[%d] (%s)", i, it.Name)
		if it.Images < 0 || it.Images > 255 {
			return fmt.Errorf("%s.images: want an integer in [0,255], got %d", f, it.Images)
		}
		if !(it.Queries >= 0) || math.IsInf(it.Queries, 0) {
			return fmt.Errorf("%s.queries: want a number >= 0, got %g", f, it.Queries)
		}
		st := mixState{static: it.Static, images: uint8(it.Images), q: it.Queries}
		if it.Static {
			st.q = 0
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
				to = toBack
			case StateEndOfSession:
				to = toEnd
			default:
				j, ok := index[t.To]
				if !ok {
					return fmt.Errorf("%s.next.%s: no interaction of that name", f, oneline.Escape(t.To))
				}
				to = int16(j)
			}
			cum += t.P * norm
			st.cum = append(st.cum, cum)
			st.to = append(st.to, to)
		}
		mx.states[i] = st
	}
	mx.shares = mx.stationary()
	if mx.QueriesPerServletPage > 0 {
		var w, q float64
		for i, st := range mx.states {
			if !st.static {
				w += mx.shares[i]
				q += mx.shares[i] * st.q
			}
		}
		if q <= 0 {
			return fmt.Errorf("queriesPerServletPage: %g asked, but no servlet page has queries", mx.QueriesPerServletPage)
		}
		scale := mx.QueriesPerServletPage * w / q
		for i := range mx.states {
			mx.states[i].q *= scale
		}
	}
	return nil
}

// stationary estimates the share of pages per interaction by running the
// client's logic (history stack included, which makes the chain
// non-Markovian) for two million pages with a fixed stream: deterministic,
// and within about 0.2% of the exact mean query count.
func (mx *Mix) stationary() []float64 {
	const pages = 2_000_000
	counts := make([]float64, len(mx.states))
	r := engine.NewStream(0, purposeMix, 0)
	var n nav
	mx.begin(&n)
	for i := 0; i < pages; i++ {
		counts[n.state]++
		mx.step(&n, &r)
	}
	for i := range counts {
		counts[i] /= pages
	}
	return counts
}

// begin starts a session.
func (mx *Mix) begin(n *nav) {
	n.state, n.hlen, n.steps = uint8(mx.start), 0, 0
}

// step moves a user to the page after the current one.
func (mx *Mix) step(n *nav, r *engine.Stream) {
	n.steps++
	if mx.SessionLength > 0 && int(n.steps) >= mx.SessionLength {
		mx.begin(n)
		return
	}
	st := &mx.states[n.state]
	x := r.Float64()
	to := int16(n.state) // stay, for what the listed transitions leave
	for j, c := range st.cum {
		if x < c {
			to = st.to[j]
			break
		}
	}
	switch to {
	case toEnd:
		mx.begin(n)
	case toBack:
		if n.hlen > 0 {
			n.hlen--
			n.state = n.hist[n.hlen%histDepth]
		}
	default:
		if n.hlen == 255 {
			n.hlen -= histDepth // keep the ring position, forget the count
		}
		n.hist[n.hlen%histDepth] = n.state
		n.hlen++
		n.state = uint8(to)
	}
}

// queries draws the SQL query count of one page of state s.
func (mx *Mix) queries(s uint8, r *engine.Stream) int {
	q := mx.states[s].q
	f := math.Floor(q)
	n := int(f)
	if q > f && r.Float64() < q-f {
		n++
	}
	return n
}

// think draws one think time.
func (mx *Mix) think(r *engine.Stream) float64 {
	t := r.Exp() * float64(mx.ThinkTime.Mean)
	if mx.ThinkTime.Cap > 0 && t > float64(mx.ThinkTime.Cap) {
		return 0
	}
	return t
}
