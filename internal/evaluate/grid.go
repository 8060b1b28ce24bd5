// Package evaluate measures softalloc on the simulator: how fast the
// simulator is, how few experiments a recommendation needs, and how close it
// comes to the best allocation of an exhaustive grid. `softalloc evaluate`
// writes the report; `softalloc validate` shares the grid.
package evaluate

import (
	"math"
	"sort"

	"github.com/softalloc/softalloc/algorithms"
)

// Named allocations every comparison includes, beside the grid.
const (
	RoleRecommended    = "recommended"
	RolePractitioners  = "practitioners"
	RoleTomcatDefaults = "tomcat-defaults"
	RoleHikari         = "hikari"
	RoleGrid           = "grid"
)

// GridEntry is one allocation of a grid and why it is there.
type GridEntry struct {
	Allocation algorithms.Allocation
	Role       string
}

// Around lists pool sizes near r (halves to doubles) and the anchors, sorted.
func Around(r int, anchors []int) []int {
	set := map[int]bool{}
	for _, f := range []float64{0.5, 0.75, 1, 1.5, 2} {
		set[max(1, int(math.Round(float64(r)*f)))] = true
	}
	for _, a := range anchors {
		set[a] = true
	}
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

// DefaultThreads and DefaultConnections are the grid's anchors: the sizes a
// practitioner would try, from the paper's 6 to 200.
var (
	DefaultThreads     = []int{6, 10, 20, 50, 100, 150, 200}
	DefaultConnections = []int{6, 10, 20, 60, 100, 200}
)

// Grid builds the comparison around a recommendation: the recommendation,
// the practitioners' 400-150-60, Tomcat's defaults (200 threads, 8
// connections), the HikariCP rule of thumb (connections = 2 x DB cores + 1),
// and every pair of app threads x connections (nil: around the
// recommendation plus the anchors) at the recommendation's web pool. A pair
// with more connections than threads is left out: such a connection is never
// opened.
func Grid(d algorithms.Deployment, rec algorithms.Allocation, threads, conns []int) []GridEntry {
	if threads == nil {
		threads = Around(rec["app"].Threads, DefaultThreads)
	}
	if conns == nil {
		conns = Around(max(rec["app"].Connections, 1), DefaultConnections)
	}
	dbCores := 1
	if t, ok := d.Tier("db"); ok && t.Cores > 0 {
		dbCores = t.Cores
	}
	web := rec["web"].Threads
	named := []GridEntry{
		{rec, RoleRecommended},
		{algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}, RolePractitioners},
		{algorithms.Allocation{"web": {Threads: web}, "app": {Threads: 200, Connections: 8}}, RoleTomcatDefaults},
		{algorithms.Allocation{"web": {Threads: web}, "app": {Threads: 150, Connections: 2*dbCores + 1}}, RoleHikari},
	}
	seen := map[string]bool{}
	var out []GridEntry
	add := func(e GridEntry) {
		if !seen[e.Allocation.Key()] {
			seen[e.Allocation.Key()] = true
			out = append(out, e)
		}
	}
	for _, n := range named {
		add(n)
	}
	for _, t := range threads {
		for _, c := range conns {
			if c <= t {
				add(GridEntry{algorithms.Allocation{"web": {Threads: web}, "app": {Threads: t, Connections: c}}, RoleGrid})
			}
		}
	}
	return out
}

// Workloads are six steps of 500 users from 1,000 below the saturation workload.
func Workloads(saturation int) []int {
	var out []int
	for u := max(500, saturation-1000); len(out) < 6; u += 500 {
		out = append(out, u)
	}
	return out
}
