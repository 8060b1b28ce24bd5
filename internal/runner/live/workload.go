package live

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
)

// Workload is a workload file: emulated users walk a Markov chain of
// interactions (RUBBoS's transition tables), each a URL, with one think time
// after every page. The format is the simulator's mix file plus URLs, so a
// workload file also describes the load to a calibrated simulator (testbed/twin).
type Workload struct {
	Name string `yaml:"name"`
	// ThinkTime is negative exponential with this mean; a draw over Cap
	// becomes 0 (the TPC-W rule RUBBoS follows). Cap 0: no cap.
	ThinkTime ThinkTime `yaml:"thinkTime"`
	// SessionLength starts a new session after this many transitions (0: never).
	SessionLength int `yaml:"sessionLength"`
	// Start is the first page of every session.
	Start string `yaml:"start"`
	// QueriesPerServletPage is for the simulator (the mean SQL queries of a
	// non-static page); the load generator ignores it.
	QueriesPerServletPage float64       `yaml:"queriesPerServletPage"`
	Interactions          []Interaction `yaml:"interactions"`

	states []wstate
	start  int
}

// ThinkTime is the users' think time.
type ThinkTime struct {
	Mean duration.Seconds `yaml:"mean"`
	Cap  duration.Seconds `yaml:"cap"`
}

// Interaction is one page.
type Interaction struct {
	Name string `yaml:"name"`
	// Path is the page's URL path and query, joined to the target. It may
	// hold {rand:LO:HI} (a uniform integer) and {pick:a|b|c} (one of the
	// words), drawn anew for each request.
	Path string `yaml:"path"`
	// Embedded are paths fetched after the page, one after another (images);
	// the page's response time ends with the last of them.
	Embedded []string `yaml:"embedded"`
	// Static marks a page the web tier serves alone; Queries is the page's
	// relative SQL query count. Both are for the simulator only.
	Static  bool    `yaml:"static"`
	Queries float64 `yaml:"queries"`
	// Next lists transitions "name: probability" in order; Back returns to
	// the previous page, EndOfSession starts a new session. What is missing
	// to 1 stays on the same page; a sum over 1 is normalised.
	Next transitions `yaml:"next"`
}

type transition struct {
	To string
	P  float64
}

// transitions keep the YAML order, so that draws do not depend on map order.
type transitions []transition

func (t *transitions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of interaction: probability", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p, err := strconv.ParseFloat(v.Value, 64)
		if err != nil || !(p >= 0) || math.IsInf(p, 0) {
			return fmt.Errorf("line %d: %s: want a probability >= 0, got %q", v.Line, k.Value, v.Value)
		}
		*t = append(*t, transition{To: k.Value, P: p})
	}
	return nil
}

// MarshalYAML writes the mapping in its order.
func (t transitions) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, tr := range t {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: tr.To},
			&yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(tr.P, 'g', -1, 64)})
	}
	return n, nil
}

// Pseudo-states.
const (
	StateBack         = "Back"
	StateEndOfSession = "EndOfSession"
	toBack            = -1
	toEnd             = -2
)

type wstate struct {
	path     *pathTemplate
	embedded []*pathTemplate
	cum      []float64
	to       []int
}

// maxHistory bounds a user's Back history; deeper Backs are vanishingly rare.
const maxHistory = 64

// LoadWorkload reads and checks a workload file.
func LoadWorkload(path string) (*Workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load workload: %w", err)
	}
	w, err := ParseWorkload(b)
	if err != nil {
		return nil, fmt.Errorf("load workload %q: %w", path, err)
	}
	return w, nil
}

// ParseWorkload reads a workload file's contents.
func ParseWorkload(b []byte) (*Workload, error) {
	w := &Workload{}
	if err := oneline.DecodeYAML(b, w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty; want a workload: thinkTime, start and interactions (name, path, next), as in testbed/workload.yaml")
		}
		return nil, err
	}
	return w, w.compile()
}

func (w *Workload) compile() error {
	switch {
	case len(w.Interactions) == 0:
		return fmt.Errorf("interactions: want at least one")
	case !w.ThinkTime.Mean.IsTimeout() || !w.ThinkTime.Cap.IsTimeout():
		return fmt.Errorf("thinkTime: want mean and cap >= 0 and under 292 years, got %g and %g seconds", w.ThinkTime.Mean, w.ThinkTime.Cap)
	case w.SessionLength < 0:
		return fmt.Errorf("sessionLength: want an integer >= 0, got %d", w.SessionLength)
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
	w.states = make([]wstate, len(w.Interactions))
	for i, it := range w.Interactions {
		f := fmt.Sprintf("interactions[%d] (%s)", i, it.Name)
		var st wstate
		var err error
		if !strings.HasPrefix(it.Path, "/") {
			return fmt.Errorf("%s.path: want a path starting with /, got %q", f, it.Path)
		}
		if st.path, err = parsePath(it.Path); err != nil {
			return fmt.Errorf("%s.path: %w", f, err)
		}
		for j, e := range it.Embedded {
			if !strings.HasPrefix(e, "/") {
				return fmt.Errorf("%s.embedded[%d]: want a path starting with /, got %q", f, j, e)
			}
			p, err := parsePath(e)
			if err != nil {
				return fmt.Errorf("%s.embedded[%d]: %w", f, j, err)
			}
			st.embedded = append(st.embedded, p)
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
			to := 0
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
				to = j
			}
			cum += t.P * norm
			st.cum = append(st.cum, cum)
			st.to = append(st.to, to)
		}
		w.states[i] = st
	}
	return nil
}

// session is one user's position in the chain.
type session struct {
	state int
	hist  []int
	steps int
}

func (w *Workload) begin(s *session) {
	s.state, s.hist, s.steps = w.start, s.hist[:0], 0
}

// step moves to the next page, as the RUBBoS client (and the simulator) does.
func (w *Workload) step(s *session, r *rand.Rand) {
	s.steps++
	if w.SessionLength > 0 && s.steps >= w.SessionLength {
		w.begin(s)
		return
	}
	st := &w.states[s.state]
	x := r.Float64()
	to := s.state
	for j, c := range st.cum {
		if x < c {
			to = st.to[j]
			break
		}
	}
	switch to {
	case toEnd:
		w.begin(s)
	case toBack:
		if n := len(s.hist); n > 0 {
			s.state, s.hist = s.hist[n-1], s.hist[:n-1]
		}
	default:
		if len(s.hist) == maxHistory {
			s.hist = append(s.hist[:0], s.hist[1:]...)
		}
		s.hist = append(s.hist, s.state)
		s.state = to
	}
}

// think draws one think time.
func (w *Workload) think(r *rand.Rand, mean time.Duration) time.Duration {
	t := time.Duration(r.ExpFloat64() * float64(mean))
	if w.ThinkTime.Cap > 0 && t > w.ThinkTime.Cap.Duration() {
		return 0
	}
	return t
}

// pathTemplate is a path with {rand:LO:HI} and {pick:a|b} parts.
type pathTemplate struct {
	parts []pathPart
}

type pathPart struct {
	kind   int // partText, partRand or partPick
	text   string
	lo, hi int
	words  []string
}

const (
	partText = iota
	partRand
	partPick
)

var pathVar = regexp.MustCompile(`\{(rand|pick):([^}]*)\}`)

func parsePath(p string) (*pathTemplate, error) {
	t := &pathTemplate{}
	last := 0
	for _, m := range pathVar.FindAllStringSubmatchIndex(p, -1) {
		t.parts = append(t.parts, pathPart{text: p[last:m[0]]})
		kind, arg := p[m[2]:m[3]], p[m[4]:m[5]]
		switch kind {
		case "rand":
			lo, hi, ok := strings.Cut(arg, ":")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			// render draws from HI-LO+1 values: that count must be an int.
			if !ok || err1 != nil || err2 != nil || b < a || uint64(b)-uint64(a) >= math.MaxInt64 {
				return nil, fmt.Errorf("%q: want {rand:LO:HI} with integers LO <= HI, less than 2^63 apart", "{rand:"+arg+"}")
			}
			t.parts = append(t.parts, pathPart{kind: partRand, lo: a, hi: b})
		case "pick":
			words := strings.Split(arg, "|")
			t.parts = append(t.parts, pathPart{kind: partPick, words: words})
		}
		last = m[1]
	}
	t.parts = append(t.parts, pathPart{text: p[last:]})
	if strings.ContainsAny(strings.Join(t.texts(), ""), "{}") {
		return nil, fmt.Errorf("unknown placeholder in %q; want {rand:LO:HI} or {pick:a|b}", p)
	}
	return t, nil
}

func (t *pathTemplate) texts() []string {
	var out []string
	for _, p := range t.parts {
		out = append(out, p.text)
	}
	return out
}

func (t *pathTemplate) render(r *rand.Rand, b *strings.Builder) string {
	b.Reset()
	for _, p := range t.parts {
		switch p.kind {
		case partPick:
			b.WriteString(p.words[r.IntN(len(p.words))])
		case partRand:
			b.WriteString(strconv.Itoa(p.lo + r.IntN(p.hi-p.lo+1)))
		default:
			b.WriteString(p.text)
		}
	}
	return b.String()
}
