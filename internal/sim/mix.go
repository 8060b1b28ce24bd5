package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/softalloc/softalloc/internal/sim/engine"
	"github.com/softalloc/softalloc/internal/workload"
)

// Mix is a workload (internal/workload: a Markov chain over interactions
// with a history stack for Back, one think time per page) compiled for the
// simulator's users, as the RUBBoS client runs it.
type Mix struct {
	workload.Workload

	states []mixState
	start  int
	shares []float64 // stationary share of pages per interaction
}

type mixState struct {
	static bool
	images uint8
	q      float64   // mean SQL queries of one page, scaled
	cum    []float64 // cumulative transition probabilities
	to     []int16   // target index, workload.ToBack or workload.ToEndOfSession
}

// histDepth bounds the Back history of a user. A deeper history only matters
// after that many consecutive Backs, which the tables make vanishingly rare,
// and the bound keeps memory a constant per user. (The live runner keeps 64:
// the two walkers differ only after 16 Backs in a row.)
const histDepth = 16

// nav is one user's position in the chain.
type nav struct {
	state uint8
	hlen  uint8
	hist  [histDepth]uint8 // ring of previous states, newest at hlen-1
	steps uint16           // transitions in this session
}

// queriesPerServletPageMean is the stationary mean SQL queries per servlet
// page after scaling.
func (mx *Mix) queriesPerServletPageMean() float64 {
	var w, q float64
	for i, st := range mx.states {
		if !st.static {
			w += mx.shares[i]
			q += mx.shares[i] * st.q
		}
	}
	if w == 0 {
		return 0
	}
	return q / w
}

func parseMix(b []byte, name string) (*Mix, error) {
	w, err := workload.Parse(b)
	if err != nil {
		if errors.Is(err, workload.ErrEmpty) {
			return nil, fmt.Errorf("load mix %q: the file is empty; want a workload mix: thinkTime, start and interactions (as in internal/sim/rubbos-browse-only.yaml)", name)
		}
		return nil, fmt.Errorf("load mix %q: %w", name, err)
	}
	mx, err := newMix(w)
	if err != nil {
		return nil, fmt.Errorf("load mix %q: %w", name, err)
	}
	return mx, nil
}

// newMix compiles a parsed workload for the simulator: per interaction its
// image and query counts beside the transition table, the stationary page
// shares, and the query counts scaled to QueriesPerServletPage.
func newMix(w *workload.Workload) (*Mix, error) {
	mx := &Mix{Workload: *w, start: w.StartIndex()}
	mx.states = make([]mixState, len(mx.Interactions))
	for i := range mx.Interactions {
		it, p := &mx.Interactions[i], w.Page(i)
		st := mixState{static: it.Static, images: uint8(it.ImageCount()), q: it.Queries, cum: p.Cum, to: p.To}
		if it.Static {
			st.q = 0
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
			return nil, fmt.Errorf("queriesPerServletPage: %g asked, but no servlet page has queries", mx.QueriesPerServletPage)
		}
		scale := mx.QueriesPerServletPage * w / q
		if math.IsInf(scale, 0) {
			return nil, fmt.Errorf("queriesPerServletPage: %g asked, but the servlet pages' queries are too few to scale to it", mx.QueriesPerServletPage)
		}
		for i := range mx.states {
			mx.states[i].q *= scale
		}
	}
	return mx, nil
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
	case workload.ToEndOfSession:
		mx.begin(n)
	case workload.ToBack:
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
