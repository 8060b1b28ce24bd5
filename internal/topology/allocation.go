package topology

import (
	"fmt"
	"sort"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

const allocationForm = "want #W_T-#A_T-#A_C (e.g. 400-150-60)"

// The pools of the allocation notation, in its order.
var allocationPools = []struct {
	tier, pool, label string
}{
	{"web", algorithms.PoolThreads, "web thread pool"},
	{"app", algorithms.PoolThreads, "app thread pool"},
	{"app", algorithms.PoolConnections, "app connection pool"},
}

// ParseAllocation reads "#W_T-#A_T-#A_C", the per-server sizes of the web
// thread pool, the app thread pool and the app DB connection pool:
// "400-150-60" is {web: {Threads: 400}, app: {Threads: 150, Connections: 60}}.
func ParseAllocation(s string) (algorithms.Allocation, error) {
	fail := func(format string, args ...any) (algorithms.Allocation, error) {
		return nil, &Error{Kind: "allocation", Value: s, Msg: fmt.Sprintf(format, args...)}
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return fail("%s, got an empty string", allocationForm)
	}
	parts := strings.Split(t, "-")
	// A minus sign splits like the separator: "-1-5-5" is an empty field
	// and 1, 5, 5, a negative web pool, not four numbers.
	sizes := 0 // the fields before parts[i] that hold a pool size
	for i, p := range parts {
		if p != "" {
			sizes++
			continue
		}
		if i+1 < len(parts) && parts[i+1] != "" {
			if sizes < len(allocationPools) {
				return fail("%s -%s is not a pool size: want a whole number in 1..%d", allocationPools[sizes].label, parts[i+1], MaxPoolSize)
			}
			continue
		}
		return fail("%s, got a - with no pool size after it", allocationForm)
	}
	if len(parts) != len(allocationPools) {
		return fail("%s, got %s", allocationForm, plural(sizes, "number"))
	}
	a := algorithms.Allocation{}
	for i, p := range parts {
		n, msg := parseCount(p, MaxPoolSize)
		if msg != "" {
			return fail("%s %q %s", allocationPools[i].label, p, msg)
		}
		setPool(a, allocationPools[i].tier, allocationPools[i].pool, n)
	}
	return a, nil
}

// FormatAllocation writes an allocation of the shape ParseAllocation returns
// (web threads, app threads and connections, all positive, nothing else) as
// "400-150-60". Any other allocation is an error: the notation cannot say it.
func FormatAllocation(a algorithms.Allocation) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", &Error{Kind: "allocation", Value: a.Key(),
			Msg: fmt.Sprintf(format, args...) + "; the notation #W_T-#A_T-#A_C holds web threads, app threads and app connections only"}
	}
	for _, name := range sortedTiers(a) {
		if name != "web" && name != "app" {
			return fail("has tier %q", name)
		}
	}
	if a["web"].Connections != 0 {
		return fail("has web connections")
	}
	for _, p := range allocationPools {
		if n := a[p.tier].Size(p.pool); n < 1 {
			return fail("%s is %d, want a positive size", p.label, n)
		}
	}
	return a.String(), nil
}

// ValidateAllocation checks that a sets every pool the deployment's tiers
// list to a positive size, and nothing else: a tier or pool the deployment
// lacks is more likely a mistake (a misspelt tier, the wrong topology) than
// something to ignore.
func ValidateAllocation(d algorithms.Deployment, a algorithms.Allocation) error {
	fail := func(format string, args ...any) error {
		v, err := FormatAllocation(a)
		if err != nil {
			v = a.Key()
		}
		return &Error{Kind: "allocation", Value: v, Msg: fmt.Sprintf(format, args...)}
	}
	for _, t := range d.Tiers {
		p := a[t.Name]
		for _, pool := range t.Pools {
			if pool != algorithms.PoolThreads && pool != algorithms.PoolConnections {
				return fail("tier %q of deployment %q lists unknown pool %q", t.Name, d.Topology, pool)
			}
			if n := p.Size(pool); n < 1 {
				return fail("tier %q: %s: want a positive size, got %d", t.Name, pool, n)
			}
		}
		for _, pool := range []string{algorithms.PoolThreads, algorithms.PoolConnections} {
			if n := p.Size(pool); n != 0 && !t.HasPool(pool) {
				return fail("tier %q: %s: set to %d, but the tier has no such pool in deployment %q", t.Name, pool, n, d.Topology)
			}
		}
	}
	for _, name := range sortedTiers(a) {
		if d.TierIndex(name) < 0 {
			return fail("names tier %q, which deployment %q lacks", name, d.Topology)
		}
	}
	return nil
}

func setPool(a algorithms.Allocation, tier, pool string, n int) {
	p := a[tier]
	switch pool {
	case algorithms.PoolThreads:
		p.Threads = n
	case algorithms.PoolConnections:
		p.Connections = n
	}
	a[tier] = p
}

// sortedTiers gives map keys in a fixed order, so errors do not vary by run.
func sortedTiers(a algorithms.Allocation) []string {
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
