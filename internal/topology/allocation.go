package topology

import (
	"errors"
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

// The keyed form of an allocation, for any deployment: "tier.pool=N" items
// separated by commas, pools named as the deployment file names them
// (threads, connections, children): web.threads=150,php.children=20,db.connections=51.

// keyedPool is one pool a deployment's allocation sets, as the keyed form names it.
type keyedPool struct {
	tier, pool string // pool: the file's name (children for a children tier's threads)
	model      string // the model's pool: threads or connections
}

func (p keyedPool) key() string { return p.tier + "." + p.pool }

// keyedPools lists the pools an allocation of d sets, in the deployment's order.
func keyedPools(d algorithms.Deployment) []keyedPool {
	var out []keyedPool
	for _, t := range d.Tiers {
		for _, pool := range t.Pools {
			name := pool
			if pool == algorithms.PoolThreads && t.Children {
				name = algorithms.PoolChildren
			}
			if pool == algorithms.PoolThreads && t.Permits {
				name = algorithms.PoolPermits
			}
			out = append(out, keyedPool{tier: t.Name, pool: name, model: pool})
		}
	}
	return out
}

// keyedExample is the keyed form of d with N for each size.
func keyedExample(pools []keyedPool) string {
	items := make([]string, len(pools))
	for i, p := range pools {
		items[i] = p.key() + "=N"
	}
	return strings.Join(items, ",")
}

// isNotationChain reports whether d's pools are the notation's: web threads,
// app threads and app connections, nothing else.
func isNotationChain(d algorithms.Deployment) bool {
	pools := keyedPools(d)
	if len(pools) != len(allocationPools) {
		return false
	}
	for i, p := range allocationPools {
		if pools[i].tier != p.tier || pools[i].pool != p.pool {
			return false
		}
	}
	return true
}

// ParseAllocationIn reads an allocation of deployment d in either form: the
// notation "400-150-60" (ParseAllocation) or the keyed form
// "web.threads=150,php.children=20,db.connections=51", which names every
// pool of d once. What it returns fits d (ValidateAllocation); anything else
// is an *Error naming the bad item and what d expects.
func ParseAllocationIn(d algorithms.Deployment, s string) (algorithms.Allocation, error) {
	pools := keyedPools(d)
	fail := func(format string, args ...any) (algorithms.Allocation, error) {
		return nil, &Error{Kind: "allocation", Value: s, Msg: fmt.Sprintf(format, args...)}
	}
	if !strings.Contains(s, "=") {
		a, err := ParseAllocation(s)
		if err == nil {
			err = ValidateAllocation(d, a)
		}
		if err == nil || isNotationChain(d) || strings.TrimSpace(s) == "" {
			return a, err
		}
		// The notation cannot say this deployment's pools: say what can.
		msg := err.Error()
		if te := (*Error)(nil); errors.As(err, &te) {
			msg = te.Msg
		}
		if len(pools) == 0 {
			return fail("%s; deployment %q has no pools to allocate", msg, d.Topology)
		}
		return fail("%s; deployment %q's pools are not the notation's web threads, app threads and app connections: want %s",
			msg, d.Topology, keyedExample(pools))
	}
	want := func() string { return "want " + keyedExample(pools) }
	byKey := map[string]keyedPool{}
	for _, p := range pools {
		byKey[p.key()] = p
	}
	a := algorithms.Allocation{}
	seen := map[string]bool{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return fail("item %d is empty: %s, separated by commas", i+1, want())
		}
		key, value, ok := strings.Cut(item, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok {
			return fail("%q is not tier.pool=N: %s", item, want())
		}
		// The last dot: a tier's name may hold dots ("db.1"), a pool's never.
		dot := strings.LastIndex(key, ".")
		tier, pool := key[:max(dot, 0)], key[dot+1:]
		if dot < 0 || tier == "" || pool == "" {
			return fail("%q: want tier.pool before the =, e.g. %s", item, keyedExample(pools[:min(1, len(pools))]))
		}
		ti := d.TierIndex(tier)
		if ti < 0 {
			return fail("unknown tier %q: deployment %q has %s", tier, d.Topology, orList(tierNames(d)))
		}
		t := d.Tiers[ti]
		if pool != algorithms.PoolThreads && pool != algorithms.PoolConnections && pool != algorithms.PoolChildren && pool != algorithms.PoolPermits {
			return fail("%s: unknown pool %q: want %s, %s, %s or %s", tier, pool,
				algorithms.PoolThreads, algorithms.PoolConnections, algorithms.PoolChildren, algorithms.PoolPermits)
		}
		p, ok := byKey[key]
		if !ok {
			var has []string
			for _, q := range pools {
				if q.tier == tier {
					has = append(has, q.key())
				}
			}
			switch {
			case len(has) == 0:
				return fail("%s: tier %q has no pools in deployment %q: %s", key, tier, d.Topology, want())
			case t.Permits && pool == algorithms.PoolThreads:
				return fail("%s: tier %q's jobs are bounded by its permits (a concurrency limit over virtual threads), not threads: write %s=N", key, tier, has[0])
			case t.Children && pool == algorithms.PoolThreads:
				return fail("%s: tier %q's workers are its children (each opens its own connections), not threads: write %s=N", key, tier, has[0])
			default:
				return fail("%s: tier %q has no %s pool in deployment %q; its pools: %s", key, tier, pool, d.Topology, strings.Join(has, ", "))
			}
		}
		if seen[key] {
			return fail("%s given twice", key)
		}
		seen[key] = true
		n, msg := parseCount(value, MaxPoolSize)
		if msg != "" {
			return fail("%s %q %s", key, value, msg)
		}
		setPool(a, p.tier, p.model, n)
	}
	var missing []string
	for _, p := range pools {
		if !seen[p.key()] {
			missing = append(missing, p.key())
		}
	}
	if len(missing) > 0 {
		return fail("%s missing: %s", strings.Join(missing, ", "), want())
	}
	return a, nil
}

// FormatAllocationIn writes an allocation of deployment d as a user can
// give it back to ParseAllocationIn: the notation "400-150-60" where it
// holds the allocation, as every command printed it so far, else the keyed
// form in the deployment's order. Pools d lacks (an allocation that does not
// fit it) follow by their model names, so that nothing is hidden.
func FormatAllocationIn(d algorithms.Deployment, a algorithms.Allocation) string {
	if s, err := FormatAllocation(a); err == nil && isNotationChain(d) {
		return s
	}
	var items []string
	done := map[string]bool{}
	for _, p := range keyedPools(d) {
		items = append(items, fmt.Sprintf("%s=%d", p.key(), a[p.tier].Size(p.model)))
		done[p.tier+"."+p.model] = true
	}
	for _, name := range sortedTiers(a) {
		for _, pool := range []string{algorithms.PoolThreads, algorithms.PoolConnections} {
			if n := a[name].Size(pool); n != 0 && !done[name+"."+pool] {
				items = append(items, fmt.Sprintf("%s.%s=%d", name, pool, n))
			}
		}
	}
	return strings.Join(items, ",")
}

func tierNames(d algorithms.Deployment) []string {
	names := make([]string, len(d.Tiers))
	for i, t := range d.Tiers {
		names[i] = t.Name
	}
	return names
}
