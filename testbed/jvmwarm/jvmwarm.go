// Package jvmwarm says when a JVM's warm-up is over: under a CPU cap of a
// tenth of a core the JIT compiles the testbed's Java app for minutes, and
// the app's CPU per page falls until it does. The evaluations measure
// nothing until the last trials' CPU per page is flat.
package jvmwarm

import "math"

// Window and Tolerance are the warm-up's stop: the last three trials' CPU
// per page each within 5% of their mean, and no fall of more than 5% from
// the first of them to the last. One pair within 5% stopped a warm-up by
// noise while the trend still fell.
const (
	Window    = 3
	Tolerance = 0.05
)

// Flat says whether the CPU per page of the last trials has settled.
func Flat(xs []float64) bool {
	if len(xs) < Window {
		return false
	}
	last := xs[len(xs)-Window:]
	m := 0.0
	for _, x := range last {
		m += x / Window
	}
	for _, x := range last {
		if !(x > 0) || math.Abs(x/m-1) > Tolerance {
			return false
		}
	}
	return (last[0]-last[len(last)-1])/m <= Tolerance
}
