package engine

import "math"

// Sources holds the next time of each of a fixed set of event sources (a
// heap, delay queues, stations) and finds the earliest: a model with a
// dozen or so sources scans them faster than it would keep them in a
// priority queue.
//
// Each key is the time's bits with the source's index in the low bits: for
// times >= 0 the bits order as the floats do, so the earliest source is a
// branch-free unsigned minimum. The index costs the time its lowest bits:
// events move earlier by a few ulps (1e-11 s at most in a trial), the same
// way on every run.
type Sources struct {
	key  []uint64 // whole blocks of 16 for minKey
	mask uint64
}

// NewSources makes n sources, numbered from 0, none with an event (+Inf).
func NewSources(n int) Sources {
	s := Sources{key: make([]uint64, (n+15)/16*16)}
	for s.mask = 1; s.mask < uint64(len(s.key)); s.mask <<= 1 {
	}
	s.mask--
	for i := range s.key {
		s.Set(i, inf)
	}
	return s
}

// Set sets the next time of source i (>= 0, or +Inf for none).
func (s *Sources) Set(i int, t float64) {
	s.key[i] = math.Float64bits(t)&^s.mask | uint64(i)
}

// Next is the earliest source and its time (rounded down by a few ulps).
func (s *Sources) Next() (int, float64) {
	keys := s.key
	// The first block is minKey written out: one call fewer per event,
	// and most models have one block.
	b := (*[16]uint64)(keys)
	k := min(min(min(b[0], b[1]), min(b[2], b[3])), min(min(b[4], b[5]), min(b[6], b[7])),
		min(min(b[8], b[9]), min(b[10], b[11])), min(min(b[12], b[13]), min(b[14], b[15])))
	for i := 16; i < len(keys); i += 16 {
		k = min(k, minKey((*[16]uint64)(keys[i:])))
	}
	return int(k & s.mask), math.Float64frombits(k &^ s.mask)
}

// minKey is the minimum of 16 keys as a tree of independent comparisons
// (depth 4), which a superscalar CPU overlaps; a running minimum would be a
// chain of 15 dependent ones.
func minKey(k *[16]uint64) uint64 {
	a := min(min(k[0], k[1]), min(k[2], k[3]))
	b := min(min(k[4], k[5]), min(k[6], k[7]))
	c := min(min(k[8], k[9]), min(k[10], k[11]))
	d := min(min(k[12], k[13]), min(k[14], k[15]))
	return min(min(a, b), min(c, d))
}
