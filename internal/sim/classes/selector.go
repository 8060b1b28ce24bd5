package classes

// selector is the approach selector of seed 002 for one class: approaches
// ranked from the most costly, each active or not, each with the server
// times of its last window calls.
type selector struct {
	limit, react float64
	active       []bool
	win          [][]float64 // ring of the last window server times per approach
	pos          []int
	// Switches counts deactivations and reactivations.
	switches int64
}

func newSelector(s *Selector, approaches int) *selector {
	sel := &selector{limit: float64(s.TimeLimit), react: float64(s.Reactivation),
		active: make([]bool, approaches), win: make([][]float64, approaches), pos: make([]int, approaches)}
	for a := range sel.active {
		sel.active[a] = true
		sel.win[a] = make([]float64, 0, s.Window)
	}
	return sel
}

// pick is the approach of the next request: the most costly active one.
func (s *selector) pick() int {
	for a, on := range s.active {
		if on {
			return a
		}
	}
	return len(s.active) - 1 // not reached: the cheapest is never deactivated
}

// report takes the server time of a call that used approach a. Its cost is
// the worst of the window; past the time limit a (unless the cheapest) is
// deactivated; below the reactivation threshold the next more costly
// approach, if inactive, is reactivated with its history forgotten.
func (s *selector) report(a int, serverTime float64) {
	w := s.win[a]
	if len(w) < cap(w) {
		w = append(w, serverTime)
		s.win[a] = w
	} else {
		w[s.pos[a]] = serverTime
		s.pos[a] = (s.pos[a] + 1) % len(w)
	}
	cost := 0.0
	for _, v := range w {
		cost = max(cost, v)
	}
	switch {
	case cost > s.limit:
		if a < len(s.active)-1 && s.active[a] {
			s.active[a] = false
			s.switches++
		}
	case cost < s.react:
		if a > 0 && s.active[a] && !s.active[a-1] {
			s.active[a-1] = true
			s.win[a-1] = s.win[a-1][:0]
			s.pos[a-1] = 0
			s.switches++
		}
	}
}
