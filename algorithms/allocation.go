package algorithms

import (
	"fmt"
	"math"
	"strings"
)

// TierSize is one tier's pool sizes from CalculateMinAllocation.
type TierSize struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// Jobs is the tier's mean concurrent jobs L (all servers).
	Jobs             float64 `json:"jobs"`
	TotalThreads     int     `json:"totalThreads"`
	ThreadsPerServer int     `json:"threadsPerServer"`
	// Connections are set for tiers with a connection pool only.
	HasConnections       bool `json:"-"`
	TotalConnections     int  `json:"totalConnections"`
	ConnectionsPerServer int  `json:"connectionsPerServer"`
	// ReqRatio (critical tier requests per request of this tier) and
	// RTTRatio (this tier's RTT over the critical tier's) for front tiers.
	ReqRatio float64 `json:"reqRatio,omitempty"`
	RTTRatio float64 `json:"rttRatio,omitempty"`
	Position string  `json:"position"` // "front", "critical" or "behind"
	// ConnectionsPerChild is a children tier's measured connections per
	// busy child (0: not measured), from which the next tier's connection
	// limit follows (MaxConnections).
	ConnectionsPerChild float64 `json:"connectionsPerChild,omitempty"`
}

// Sizing is the result of CalculateMinAllocation.
type Sizing struct {
	Critical string     `json:"critical"`
	MinJobs  float64    `json:"minJobs"`
	Tiers    []TierSize `json:"tiers"`
}

// CalculateMinAllocation is Algorithm 1's third procedure. The critical tier
// and the tiers behind it get minJobs; a tier in front gets, by Little's law
// and the forced flow law (Formula 3), L = minJobs * RTTratio / Reqratio,
// which equals its own TP * RTT. Totals are rounded to the nearest integer
// (at least 1) and split across replicas rounding up: these are lower bounds.
// minJobs 0 means: take it from the critical tier's measurement. Inputs must
// be finite, one measurement per tier, and every pool size must fit an int32.
func CalculateMinAllocation(d Deployment, critical string, minJobs float64, measured []TierMeasurement) (Sizing, error) {
	ci := d.TierIndex(critical)
	if ci < 0 {
		return Sizing{}, fmt.Errorf("critical tier %q is not in the deployment (tiers: %s)", critical, tierNames(d))
	}
	switch {
	case math.IsInf(minJobs, 0):
		return Sizing{}, fmt.Errorf("minJobs: want a finite number, got %g", minJobs)
	case !(minJobs >= 0): // NaN too
		return Sizing{}, fmt.Errorf("minJobs: want > 0, got %g", minJobs)
	}
	byTier := map[string]TierMeasurement{}
	at := map[string]int{}
	for i, m := range measured {
		if d.TierIndex(m.Tier) < 0 {
			return Sizing{}, fmt.Errorf("measured tier %q is not in the deployment (tiers: %s)", m.Tier, tierNames(d))
		}
		// A second row for a tier would silently replace the first.
		if j, dup := at[m.Tier]; dup {
			return Sizing{}, fmt.Errorf("tiers[%d] and tiers[%d] are both named %q: want one measurement per tier", j, i, m.Tier)
		}
		at[m.Tier] = i
		for _, f := range []struct {
			name string
			v    float64
		}{{"throughput", m.Throughput}, {"responseTime", m.ResponseTime}} {
			if !(f.v > 0) || math.IsInf(f.v, 0) {
				return Sizing{}, fmt.Errorf("tier %q: %s: want a finite number > 0, got %g", m.Tier, f.name, f.v)
			}
		}
		if c := m.ConnectionsPerChild; !(c >= 0) || math.IsInf(c, 0) || c > maxConnectionsPerChild {
			return Sizing{}, fmt.Errorf("tier %q: connectionsPerChild: want a finite number >= 0 (0: not measured) and at most %d, got %g", m.Tier, maxConnectionsPerChild, c)
		} else if c > 0 && !d.Tiers[d.TierIndex(m.Tier)].Children {
			return Sizing{}, fmt.Errorf("tier %q: connectionsPerChild: the tier has no children (pools: {children: N}), got %g", m.Tier, c)
		}
		byTier[m.Tier] = m
	}
	crit, haveCrit := byTier[critical]
	source := "minJobs"
	if minJobs == 0 {
		if !haveCrit {
			return Sizing{}, fmt.Errorf("critical tier %q: no throughput and response time measured, and no minJobs given", critical)
		}
		minJobs = LittlesLaw(crit.Throughput, crit.ResponseTime)
		source = fmt.Sprintf("critical tier %q: throughput x responseTime", critical)
	}
	if err := poolSize(source, minJobs); err != nil {
		return Sizing{}, err
	}
	out := Sizing{Critical: critical, MinJobs: minJobs}
	for i, t := range d.Tiers {
		ts := TierSize{Name: t.Name, Replicas: t.Replicas, HasConnections: t.HasPool(PoolConnections),
			ConnectionsPerChild: byTier[t.Name].ConnectionsPerChild}
		switch {
		case i < ci:
			m, ok := byTier[t.Name]
			if !ok && t.Role == RolePooler && haveCrit {
				// A pooler forwards every query, and a client waits at it
				// at least the database's time: taken as transparent
				// (Reqratio 1, RTTratio 1), its jobs are minJobs, a lower
				// bound as the formula's are.
				m, ok = TierMeasurement{Tier: t.Name, Throughput: crit.Throughput, ResponseTime: crit.ResponseTime}, true
			}
			if !ok {
				return Sizing{}, fmt.Errorf("front tier %q: throughput and response time are needed to size it", t.Name)
			}
			if !haveCrit {
				return Sizing{}, fmt.Errorf("critical tier %q: throughput and response time are needed to size the front tiers", critical)
			}
			ts.Position = "front"
			ts.ReqRatio = crit.Throughput / m.Throughput
			ts.RTTRatio = m.ResponseTime / crit.ResponseTime
			ts.Jobs = minJobs * ts.RTTRatio / ts.ReqRatio
			// Extreme but finite measurements can overflow a ratio, which
			// no output format can carry.
			for _, r := range []struct {
				name string
				v    float64
			}{{"Reqratio", ts.ReqRatio}, {"RTTratio", ts.RTTRatio}} {
				if math.IsInf(r.v, 0) || !(r.v > 0) {
					return Sizing{}, fmt.Errorf("front tier %q: %s to the critical tier is %g: want a finite ratio; check the tiers' throughput and responseTime", t.Name, r.name, r.v)
				}
			}
			if err := poolSize(fmt.Sprintf("front tier %q: minJobs x RTTratio / Reqratio", t.Name), ts.Jobs); err != nil {
				return Sizing{}, err
			}
		case i == ci:
			ts.Position, ts.Jobs = "critical", minJobs
		default:
			ts.Position, ts.Jobs = "behind", minJobs
		}
		splitTier(&ts, t.Replicas)
		out.Tiers = append(out.Tiers, ts)
	}
	return out, nil
}

// poolSize refuses a number of jobs that no pool can be: not finite, or
// past an int32 (no server configures more threads than that).
func poolSize(source string, jobs float64) error {
	if math.IsNaN(jobs) || math.IsInf(jobs, 0) || math.Round(jobs) > math.MaxInt32 {
		return fmt.Errorf("%s = %.4g jobs: want a pool size of at most %d", source, jobs, math.MaxInt32)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func tierNames(d Deployment) string {
	names := make([]string, len(d.Tiers))
	for i, t := range d.Tiers {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// DefaultConnectionsPerChild is the connections a child is taken to hold
// open to the next tier when no trial measured it: conservative, as too few
// fails pages ("Too many connections") while too many costs a little memory.
// WordPress held 1.5 per busy child (40.7 for 27.2) and opens two at most.
const DefaultConnectionsPerChild = 2.0

// ConnectionReserve are the connections a database keeps beyond the
// children's: its monitoring (mysqld_exporter holds up to 3) and an
// administrator's clients, which a full server would lock out.
const ConnectionReserve = 10

// maxConnectionsPerChild bounds a reading: no worker holds more.
const maxConnectionsPerChild = 1000

// MaxConnections is the connection limit a children tier's next tier needs
// per server (MariaDB's and MySQL's max_connections): every child of every
// server of From may reach one server, each with PerChild connections, and
// Reserve more for monitoring and administration.
type MaxConnections struct {
	From     string  `json:"from"`
	Children int     `json:"children"`
	PerChild float64 `json:"perChild"`
	// Measured says PerChild was read from a trial (ConnectionsPerChild);
	// false: DefaultConnectionsPerChild.
	Measured  bool `json:"measured"`
	Reserve   int  `json:"reserve"`
	PerServer int  `json:"perServer"`
}

// NewMaxConnections derives the limit for children children holding
// perChild connections each (0: not measured, DefaultConnectionsPerChild):
// ceil(children x perChild) + ConnectionReserve.
func NewMaxConnections(from string, children int, perChild float64) MaxConnections {
	m := MaxConnections{From: from, Children: children, PerChild: perChild, Measured: perChild > 0, Reserve: ConnectionReserve}
	if !m.Measured {
		m.PerChild = DefaultConnectionsPerChild
	}
	// 20 x 1.5 must not become 31.
	m.PerServer = int(math.Ceil(withoutFloatError(float64(children)*m.PerChild))) + m.Reserve
	return m
}

// withoutFloatError rounds x to 1e-9, so that a product's float error
// rounds or ceils as the printed value does (WordPress's X R read
// 3.4999999999999996, printed 3.5).
func withoutFloatError(x float64) float64 { return math.Round(x*1e9) / 1e9 }

// String says how the limit was derived, for people.
func (m MaxConnections) String() string {
	src := "measured"
	if !m.Measured {
		src = "not measured: the default"
	}
	return fmt.Sprintf("%d = %d %s children x %.2f connections each (%s) + %d reserved for monitoring and administration",
		m.PerServer, m.Children, m.From, m.PerChild, src, m.Reserve)
}

// ConnectionsPerChild reads from one trial the connections a busy child of
// children tier tier holds open to the next tier: the next tier's servers'
// open connections (their pool named PoolConnections, e.g. MariaDB's
// threads_connected) over the tier's busy children. ok is false when the
// trial has no such reading or no busy child.
func ConnectionsPerChild(d Deployment, tier string, o Observation) (perChild float64, ok bool) {
	i := d.TierIndex(tier)
	if i < 0 || i+1 >= len(d.Tiers) || !d.Tiers[i].Children {
		return 0, false
	}
	next := d.Tiers[i+1].Name
	var busy, conns float64
	read := false
	for _, s := range o.Servers {
		for _, p := range s.Pools {
			switch {
			case s.Tier == tier && p.Name == PoolThreads:
				busy += p.Busy
			case s.Tier == next && p.Name == PoolConnections:
				conns, read = conns+p.Busy, true
			}
		}
	}
	c := conns / busy
	if !read || !(busy > 0) || !(c > 0) || math.IsInf(c, 0) {
		return 0, false
	}
	return min(c, maxConnectionsPerChild), true
}

// TierRecommendation is recommend's answer for one tier: pool sizes per
// server, and the formula's minimum where a larger buffer was kept.
type TierRecommendation struct {
	Name                 string `json:"name"`
	Replicas             int    `json:"replicas"`
	ThreadsPerServer     int    `json:"threadsPerServer"`
	ConnectionsPerServer *int   `json:"connectionsPerServer"`
	TotalThreads         int    `json:"totalThreads"`
	TotalConnections     *int   `json:"totalConnections"`
	// Minimum is Formula 3's value where recommend kept a larger buffer.
	Minimum *TierMinimum `json:"minimum,omitempty"`
	// Workers names the tier's threads when they are children
	// ("php-fpm children"): each opens its own connections to the next tier.
	Workers string `json:"workers,omitempty"`
	// Permits says the tier's threads are the permits of a concurrency
	// limit over virtual threads (Tier.Permits): the limit is what to set.
	Permits bool `json:"permits,omitempty"`
	// MaxConnections is, for the tier behind a children tier, the
	// connection limit its servers need.
	MaxConnections *MaxConnections `json:"maxConnections,omitempty"`
}

// TierMinimum is the formula's per-server sizes.
type TierMinimum struct {
	ThreadsPerServer     int  `json:"threadsPerServer"`
	ConnectionsPerServer *int `json:"connectionsPerServer"`
}

// BoundingPool is the pool that bounds the critical tier's concurrent jobs:
// the critical tier's own thread pool if it has one; else the nearest tier in
// front whose connections lead to it (C-JDBC and MySQL threads follow the app
// tier's DB connections), else that tier's threads. It returns the tier's
// index and the pool's name.
func BoundingPool(d Deployment, critical string) (int, string) {
	ci := d.TierIndex(critical)
	if ci >= 0 && d.Tiers[ci].HasPool(PoolThreads) {
		return ci, PoolThreads
	}
	for i := ci - 1; i >= 0; i-- {
		if d.Tiers[i].HasPool(PoolConnections) {
			return i, PoolConnections
		}
		if d.Tiers[i].HasPool(PoolThreads) {
			return i, PoolThreads
		}
	}
	return ci, PoolThreads
}

// inFront says whether pool p of tier i comes before the bounding pool (bt,
// bp) on a request's path: every pool of an earlier tier, and a tier's
// threads before its own connections (a thread takes a connection).
func inFront(i int, p string, bt int, bp string) bool {
	return i < bt || (i == bt && p == PoolThreads && bp == PoolConnections)
}

// RecommendAllocation turns the sizing into an allocation; a nil reserve
// gives the formula alone (what `softalloc size` prints). Formula 3 is a
// lower bound, and Sec. III-C shows a front tier must also buffer: every pool
// in front of the pool that bounds the critical server's jobs keeps at least
// its reserved size, with the formula's value shown beside it; the bounding
// pool and those behind it take the formula. On 1/4/1/4 (C-JDBC critical)
// that keeps the web pool and Tomcat's threads, which queue requests in front
// of the DB connections, and sizes the connections by the formula.
func RecommendAllocation(d Deployment, sizing Sizing, reserve Allocation) (Allocation, []TierRecommendation) {
	bt, bp := BoundingPool(d, sizing.Critical)
	alloc := Allocation{}
	recs := make([]TierRecommendation, 0, len(sizing.Tiers))
	for i, ts := range sizing.Tiers {
		t := d.Tiers[i]
		// Behind a children tier the connection limit follows from the
		// children (already sized: they are in front), and is the
		// tier's connection pool where the deployment lists one.
		var derived *MaxConnections
		if i > 0 && d.Tiers[i-1].Children {
			m := NewMaxConnections(d.Tiers[i-1].Name, recs[i-1].TotalThreads, sizing.Tiers[i-1].ConnectionsPerChild)
			derived = &m
			if ts.HasConnections {
				ts.ConnectionsPerServer, ts.TotalConnections = m.PerServer, m.PerServer*t.Replicas
			}
		}
		threads, conns := ts.ThreadsPerServer, ts.ConnectionsPerServer
		if inFront(i, PoolThreads, bt, bp) {
			threads = max(threads, reserve[t.Name].Threads)
		}
		if inFront(i, PoolConnections, bt, bp) && derived == nil {
			conns = max(conns, reserve[t.Name].Connections)
		}
		rec := TierRecommendation{Name: t.Name, Replicas: t.Replicas, ThreadsPerServer: threads, TotalThreads: ts.TotalThreads}
		buffered := threads != ts.ThreadsPerServer || (ts.HasConnections && conns != ts.ConnectionsPerServer)
		// A recommendation configures per-server pools, so its totals are
		// what those add up to; the formula's totals stay for pool-less tiers
		// (C-JDBC, MySQL) and for `size`.
		configured := buffered || (reserve != nil && len(t.Pools) > 0)
		if configured {
			rec.TotalThreads = threads * t.Replicas
		}
		if ts.HasConnections {
			c, total := conns, ts.TotalConnections
			if configured {
				total = conns * t.Replicas
			}
			rec.ConnectionsPerServer, rec.TotalConnections = &c, &total
		}
		if buffered {
			m := &TierMinimum{ThreadsPerServer: ts.ThreadsPerServer}
			if ts.HasConnections {
				c := ts.ConnectionsPerServer
				m.ConnectionsPerServer = &c
			}
			rec.Minimum = m
		}
		if len(t.Pools) > 0 {
			p := TierPools{}
			if t.HasPool(PoolThreads) {
				p.Threads = threads
			}
			if t.HasPool(PoolConnections) {
				p.Connections = conns
			}
			alloc[t.Name] = p
		}
		if t.Children {
			rec.Workers = t.PoolLabel(PoolThreads)
		}
		rec.Permits = t.Permits
		rec.MaxConnections = derived
		recs = append(recs, rec)
	}
	return alloc, recs
}
