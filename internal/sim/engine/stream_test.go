package engine

import (
	"math/rand/v2"
	"testing"
)

// TestStreamIsPCG checks the hand-written PCG step against math/rand/v2's,
// draw for draw.
func TestStreamIsPCG(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		s := NewStream(seed, 1, seed*7919)
		p := rand.NewPCG(s.hi, s.lo)
		for i := 0; i < 10000; i++ {
			if got, want := s.uint64(), p.Uint64(); got != want {
				t.Fatalf("seed %d draw %d: got %#x, want %#x", seed, i, got, want)
			}
		}
	}
}
