package algorithms

import (
	"fmt"
	"slices"
	"strings"
)

// The named allocations of a children stack (php-fpm's), the rules its
// operators size by; Tomcat's and HikariCP's mean nothing there.
const (
	// RoleDebianDefaults is the stack as Debian ships it: Apache's
	// MaxRequestWorkers 150, php-fpm's pm.max_children 5 (pm = dynamic),
	// MariaDB's max_connections 151.
	RoleDebianDefaults = "debian-defaults"
	// RoleServerDefaults keeps Apache's and MariaDB's defaults (150, 151)
	// beside the recommended children.
	RoleServerDefaults = "apache-mariadb-defaults"
	// RoleMemoryRule is the calculators' rule: the memory left for PHP
	// over a child's mean RSS.
	RoleMemoryRule = "memory-rule"
	// RoleFourPerCore is "4 x cores" children.
	RoleFourPerCore = "4x-cores"
	// RoleOverAllocation is a large pool, 200 children.
	RoleOverAllocation = "over-allocation"
)

// The defaults those roles stand for.
const (
	ApacheMaxRequestWorkers = 150
	DebianPHPFPMMaxChildren = 5
	MariaDBMaxConnections   = 151
	OverAllocationChildren  = 200
)

// DefaultGridChildren are a children grid's anchors.
var DefaultGridChildren = []int{5, 10, 20, 50, 100, 200}

// ChildrenGridOptions shape ChildrenGrid.
type ChildrenGridOptions struct {
	// Children are the grid's children pools (nil: around the
	// recommendation, plus DefaultGridChildren).
	Children []int
	// MemoryRule is the memory rule's children (memory limit / mean child
	// RSS); 0: not compared.
	MemoryRule int
	// PerChild is the connections a child holds, for the database's
	// limit (0: DefaultConnectionsPerChild).
	PerChild float64
}

// ChildrenGrid builds the comparison of a deployment whose tier of
// children (php-fpm) is what is sized: the recommendation, the named
// operators' rules, and each children pool of the grid at the
// recommendation's front pool. Where the tier behind the children lists a
// connections pool, every allocation but the defaults' sets it to the
// limit its children need (NewMaxConnections).
func ChildrenGrid(d Deployment, rec Allocation, opts ChildrenGridOptions) ([]GridEntry, error) {
	ci := slices.IndexFunc(d.Tiers, func(t Tier) bool { return t.Children })
	if ci < 0 || ci+1 >= len(d.Tiers) {
		return nil, fmt.Errorf("children grid: deployment %q has no tier with children (pools: {children: N}) in front of another", d.Topology)
	}
	ct, next := d.Tiers[ci], d.Tiers[ci+1]
	var front *Tier
	if ci > 0 && d.Tiers[ci-1].HasPool(PoolThreads) {
		front = &d.Tiers[ci-1]
	}
	children := opts.Children
	if children == nil {
		children = Around(max(rec[ct.Name].Threads, 1), DefaultGridChildren)
	}
	// entry builds one allocation: web threads (0: the recommendation's),
	// children, and the database's limit (0: derived from the children).
	entry := func(web, n, dbConns int) Allocation {
		a := rec.Clone()
		if front != nil && web > 0 {
			a[front.Name] = TierPools{Threads: web}
		}
		a[ct.Name] = TierPools{Threads: n}
		if next.HasPool(PoolConnections) {
			if dbConns == 0 {
				dbConns = NewMaxConnections(ct.Name, n*ct.Replicas, opts.PerChild).PerServer
			}
			p := a[next.Name]
			p.Connections = dbConns
			a[next.Name] = p
		}
		return a
	}
	named := []GridEntry{
		{Allocation: rec, Role: RoleRecommended},
		{Allocation: entry(ApacheMaxRequestWorkers, DebianPHPFPMMaxChildren, MariaDBMaxConnections), Role: RoleDebianDefaults},
		{Allocation: entry(ApacheMaxRequestWorkers, max(rec[ct.Name].Threads, 1), MariaDBMaxConnections), Role: RoleServerDefaults},
	}
	if opts.MemoryRule > 0 {
		named = append(named, GridEntry{Allocation: entry(0, opts.MemoryRule, 0), Role: RoleMemoryRule})
	}
	named = append(named,
		GridEntry{Allocation: entry(0, 4*max(ct.Cores, 1), 0), Role: RoleFourPerCore},
		GridEntry{Allocation: entry(0, OverAllocationChildren, 0), Role: RoleOverAllocation})
	seen := map[string]int{}
	var out []GridEntry
	add := func(e GridEntry) {
		i, ok := seen[e.Allocation.Key()]
		if !ok {
			seen[e.Allocation.Key()] = len(out)
			out = append(out, e)
		} else if e.Role != RoleGrid {
			out[i].Also = append(out[i].Also, e.Role)
		}
	}
	for _, n := range named {
		add(n)
	}
	for _, n := range children {
		add(GridEntry{Allocation: entry(0, n, 0), Role: RoleGrid})
	}
	return out, nil
}

// DescribeAllocation names an allocation's pools as the deployment's tiers
// call them, in chain order: "web threads 60, php php-fpm children 12, db
// connections 46". A tier the deployment lacks is named last, as Key does.
func DescribeAllocation(d Deployment, a Allocation) string {
	var parts []string
	done := map[string]bool{}
	for _, t := range d.Tiers {
		p, ok := a[t.Name]
		if !ok {
			continue
		}
		done[t.Name] = true
		for _, pool := range []string{PoolThreads, PoolConnections} {
			if n := p.Size(pool); n != 0 {
				parts = append(parts, fmt.Sprintf("%s %s %d", t.Name, t.PoolLabel(pool), n))
			}
		}
	}
	rest := Allocation{}
	for name, p := range a {
		if !done[name] {
			rest[name] = p
		}
	}
	if len(rest) > 0 {
		parts = append(parts, rest.Key())
	}
	return strings.Join(parts, ", ")
}
