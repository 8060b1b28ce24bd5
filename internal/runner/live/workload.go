package live

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/softalloc/softalloc/internal/workload"
)

// ParseWorkload reads a workload file (internal/workload) for the load
// generator, which needs what the simulator does not: every interaction's
// path, and its embedded requests as paths rather than a count. Static,
// queries and queriesPerServletPage are the simulator's; they are ignored.
func ParseWorkload(b []byte) (*workload.Workload, error) {
	w, err := workload.Parse(b)
	if err != nil {
		return nil, err
	}
	for i := range w.Interactions {
		it := &w.Interactions[i]
		f := fmt.Sprintf("interactions[%d] (%s)", i, it.Name)
		if w.Page(i).Path == nil {
			return nil, fmt.Errorf("%s.path: want a path starting with /, got %q", f, it.Path)
		}
		if it.Images > 0 && len(it.Embedded) == 0 {
			return nil, fmt.Errorf("%s.images: %d, but the load generator fetches embedded paths: list them under embedded", f, it.Images)
		}
	}
	return w, nil
}

// maxHistory bounds a user's Back history; deeper Backs are vanishingly
// rare. (The simulator keeps 16: the two walkers differ only after 16
// Backs in a row.)
const maxHistory = 64

// session is one user's position in the chain.
type session struct {
	state int
	hist  []int
	steps int
}

// begin starts a session at the workload's first page.
func begin(w *workload.Workload, s *session) {
	s.state, s.hist, s.steps = w.StartIndex(), s.hist[:0], 0
}

// step moves to the next page, as the RUBBoS client (and the simulator) does.
func step(w *workload.Workload, s *session, r *rand.Rand) {
	s.steps++
	if w.SessionLength > 0 && s.steps >= w.SessionLength {
		begin(w, s)
		return
	}
	p := w.Page(s.state)
	x := r.Float64()
	to := s.state
	for j, c := range p.Cum {
		if x < c {
			to = int(p.To[j])
			break
		}
	}
	switch to {
	case workload.ToEndOfSession:
		begin(w, s)
	case workload.ToBack:
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

// think draws one think time of the given mean, capped as the workload says.
func think(w *workload.Workload, r *rand.Rand, mean time.Duration) time.Duration {
	t := time.Duration(r.ExpFloat64() * float64(mean))
	if w.ThinkTime.Cap > 0 && t > w.ThinkTime.Cap.Duration() {
		return 0
	}
	return t
}
