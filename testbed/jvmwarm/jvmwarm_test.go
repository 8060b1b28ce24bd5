package jvmwarm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFlatCPUPerPage(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		flat bool
		why  string
	}{
		{[]float64{7.40, 3.96, 3.19, 2.50, 1.85}, false, "a warm-up before recommend, still falling"},
		{[]float64{6.46, 4.58, 3.98, 2.98, 2.98}, false, "one pair within 5% while the trend fell"},
		{[]float64{2.0, 1.95, 1.9}, false, "each within 5% of the mean but 5.1% down from the first to the last"},
		{[]float64{2.0, 1.98, 2.01}, true, "flat"},
		{[]float64{3.1, 2.1, 1.95, 2.05}, true, "noise around 2 after a fall"},
		{[]float64{2.0, 2.0}, false, "fewer than three trials"},
		{[]float64{2.0, 0, 2.0}, false, "a trial without pages"},
		{nil, false, "none"},
	} {
		assert.Equal(t, c.flat, Flat(c.xs), "%v: %s", c.xs, c.why)
	}
}
