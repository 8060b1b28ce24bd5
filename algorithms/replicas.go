package algorithms

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RolePooler is a connection pooler (PgBouncer) between a tier and the
// database: clients (the app's connections) queue at it for its server
// connections, which are all the database sees. Its pool is
// PoolConnections, PgBouncer's default_pool_size per server; its
// max_client_conn is Tier.MaxClientConn, a limit and not a pool.
const RolePooler = "pooler"

// Surge is how many pods a rolling update adds over the replica count
// while old ones still run with their pools open (Kubernetes' maxSurge):
// a count, or a percentage of the count rounded up as Kubernetes does.
type Surge struct {
	Count   int `json:"count,omitempty"`
	Percent int `json:"percent,omitempty"`
}

// At is the pods the surge adds at replicas replicas.
func (s Surge) At(replicas int) int {
	if s.Percent > 0 {
		return ceilDiv(replicas*s.Percent, 100)
	}
	return s.Count
}

// String is the surge as a deployment file writes it: "25%" or "2".
func (s Surge) String() string {
	if s.Percent > 0 {
		return strconv.Itoa(s.Percent) + "%"
	}
	return strconv.Itoa(s.Count)
}

// Scaling is a tier's replica range (an autoscaler's minReplicas and
// maxReplicas; Min == Max for a fixed count) and its rollout surge.
type Scaling struct {
	Min   int   `json:"min"`
	Max   int   `json:"max"`
	Surge Surge `json:"surge"`
}

// Reservation is a share of the database's connections held by someone
// other than the deployment's pools: an administrator, the monitoring,
// another service's pool.
type Reservation struct {
	Name        string `json:"name"`
	Connections int    `json:"connections"`
}

// ConnectionLimit is a database server's max_connections and the
// connections others hold of it, by name, in the file's order.
type ConnectionLimit struct {
	Max      int           `json:"max"`
	Reserved []Reservation `json:"reserved"`
}

// ReservedTotal is the connections others hold.
func (c ConnectionLimit) ReservedTotal() int {
	n := 0
	for _, r := range c.Reserved {
		n += r.Connections
	}
	return n
}

// ReplicaPlan is the answer for every count of a tier's replica range: the
// pools at each count, what the database sees of them, and the largest
// count the database's limit admits. PlanReplicas makes it.
type ReplicaPlan struct {
	// Tier is the tier whose count varies; Min..Max its range (measured at
	// Measured), Surge as written.
	Tier     string `json:"tier"`
	Min      int    `json:"min"`
	Max      int    `json:"max"`
	Measured int    `json:"measured"`
	Surge    string `json:"surge"`
	Critical string `json:"critical"`
	// MinJobs is the critical tier's concurrent jobs at Measured replicas.
	MinJobs float64 `json:"minJobs"`
	// CapacityScales says the critical tier is the replicated one: each
	// replica adds capacity and every total grows with the count. False:
	// the replicas split a budget that does not grow with them.
	CapacityScales bool `json:"capacityScales"`
	// Feeder is the tier whose connections reach the database (or the
	// pooler); Database the db tier.
	Feeder   string `json:"feeder,omitempty"`
	Database string `json:"database,omitempty"`
	// ConnectionLimit is the database's, when the file gives it.
	ConnectionLimit *ConnectionLimit `json:"connectionLimit,omitempty"`
	Pooler          *PoolerPlan      `json:"pooler,omitempty"`
	Counts          []ReplicaCount   `json:"counts"`
	// SafeMaxReplicas is the largest count up to which every count from
	// Min fits the limit with the pools of its row (surge included); null
	// when nothing bounds it (no limit, or the count opens no connection
	// the limit counts), 0 when Min itself does not fit.
	SafeMaxReplicas *int `json:"safeMaxReplicas"`
	// FixedPool is the answer for a configuration that keeps one pool size
	// for every count; present with a limit the Feeder's pool counts against.
	FixedPool *FixedPool `json:"fixedPool,omitempty"`
	Notes     []string   `json:"notes"`
	Warnings  []string   `json:"warnings"`
}

// ReplicaCount is the plan at one replica count.
type ReplicaCount struct {
	Replicas int `json:"replicas"`
	// Surge is the pods a rollout adds at this count.
	Surge int `json:"surge"`
	// ThreadsPerReplica and ConnectionsPerReplica are the varying tier's
	// pools per server (connections: its DB or pooler connections, a
	// children tier's children x connections per child; null: none).
	ThreadsPerReplica     int  `json:"threadsPerReplica"`
	ConnectionsPerReplica *int `json:"connectionsPerReplica"`
	TotalThreads          int  `json:"totalThreads"`
	TotalConnections      *int `json:"totalConnections"`
	// PeakConnections are the Feeder's connections during a rollout:
	// (replicas + surge) x per replica where the Feeder is the varying tier.
	PeakConnections *int `json:"peakConnections"`
	// PoolerPoolSize is default_pool_size per pooler server, and
	// PoolerClientConnections the client connections each pooler server
	// takes at the peak (with a pooler only).
	PoolerPoolSize          int `json:"poolerPoolSize,omitempty"`
	PoolerClientConnections int `json:"poolerClientConnections,omitempty"`
	// PoolerReservePoolSize is reserve_pool_size per pooler server: the
	// server connections it adds to the pool under a wait, which the
	// database sees too.
	PoolerReservePoolSize int `json:"poolerReservePoolSize,omitempty"`
	// DatabaseConnections are the connections each database server sees at
	// the peak: the pooler's server connections, else the Feeder's.
	DatabaseConnections int `json:"databaseConnections"`
	// MaxConnections is the max_connections they need: DatabaseConnections
	// and what others reserve.
	MaxConnections int `json:"maxConnections"`
	// Fits is whether the count fits the limits given (null: none given).
	Fits *bool `json:"fits"`
	// Allocation is every pool at this count, per server.
	Allocation Allocation `json:"allocation"`
}

// PoolerPlan is the pooler's configuration for the whole range.
type PoolerPlan struct {
	Tier     string `json:"tier"`
	Replicas int    `json:"replicas"`
	// DefaultPoolSize is the largest of the range's per-server pools, and
	// ReservePoolSize the configured reserve_pool_size: ServerConnections =
	// Replicas x (DefaultPoolSize + ReservePoolSize) are what the database
	// sees at most.
	DefaultPoolSize   int `json:"defaultPoolSize"`
	ReservePoolSize   int `json:"reservePoolSize,omitempty"`
	ServerConnections int `json:"serverConnections"`
	// MaxClientConn is the client connections one pooler server takes at
	// the range's top with surge (the smallest max_client_conn that fits);
	// Configured is the file's (0: not given).
	MaxClientConn int `json:"maxClientConn"`
	Configured    int `json:"configured,omitempty"`
}

// FixedPool is the answer for one connection pool size kept at every count.
type FixedPool struct {
	// ConnectionsPerReplica is the range's smallest count's pool: the whole
	// budget at Min replicas.
	ConnectionsPerReplica int `json:"connectionsPerReplica"`
	// MaxReplicas is the largest count (surge included) the limit admits
	// with it: an autoscaler's safe maxReplicas for that configuration.
	MaxReplicas int `json:"maxReplicas"`
	// LargestFitting is the largest pool per replica with which the range's
	// top, with surge, fits (0: none).
	LargestFitting int `json:"largestFitting"`
}

// PlanReplicas answers for every count of the varying tier's range: each
// count's pools by CalculateMinAllocation's split and RecommendAllocation's
// buffers, the connections the database (or the pooler) sees, and the
// largest count the database's limit admits. It returns nil when the
// deployment declares no range, surge, connection limit or pooler, so that
// fixed deployments are answered as before. sz is the sizing at the
// deployment's replica counts; reserve recommend's front buffers; measured
// the tiers' measurements (the critical tier's throughput is quoted).
//
// The model: the critical tier's minJobs is a budget of concurrent jobs.
// When the critical tier is not the varying one (a shared database behind
// the app's replicas), every tier's total stays what it is at the measured
// count, and the replicas split it (Formula 3's totals, rounded up per
// server): more replicas, smaller pools, no more capacity. When the varying
// tier is critical, each replica brings its own capacity and every total
// grows with the count in proportion.
func PlanReplicas(d Deployment, sz Sizing, reserve Allocation, measured []TierMeasurement) *ReplicaPlan {
	vi, pi, dbi := -1, -1, -1
	for i, t := range d.Tiers {
		if t.Scaling != nil && vi < 0 {
			vi = i
		}
		if t.Role == RolePooler && pi < 0 {
			pi = i
		}
		if t.Role == RoleDB && (dbi < 0 || t.ConnectionLimit != nil && d.Tiers[dbi].ConnectionLimit == nil) {
			dbi = i
		}
	}
	var limit *ConnectionLimit
	if dbi >= 0 {
		limit = d.Tiers[dbi].ConnectionLimit
	}
	if vi < 0 && pi < 0 && limit == nil {
		return nil
	}
	if len(sz.Tiers) != len(d.Tiers) {
		return nil // not a sizing of this deployment
	}
	// The feeder: the nearest tier in front of the pooler (else the
	// database) with connections of its own; pool-less tiers between
	// (C-JDBC) pass them on one for one.
	sink := pi
	if sink < 0 {
		sink = dbi
	}
	fi := -1
	for i := sink - 1; i >= 0 && sink > 0; i-- {
		if d.Tiers[i].HasPool(PoolConnections) || d.Tiers[i].Children {
			fi = i
			break
		}
		if len(d.Tiers[i].Pools) > 0 {
			break
		}
	}
	if vi < 0 {
		vi = fi // a fixed deployment with a limit or a pooler: its feeder's count
	}
	if vi < 0 {
		return nil
	}
	vt := d.Tiers[vi]
	sc := Scaling{Min: vt.Replicas, Max: vt.Replicas}
	if vt.Scaling != nil {
		sc = *vt.Scaling
	}
	ci := d.TierIndex(sz.Critical)
	plan := &ReplicaPlan{Tier: vt.Name, Min: sc.Min, Max: sc.Max, Measured: vt.Replicas, Surge: sc.Surge.String(),
		Critical: sz.Critical, MinJobs: sz.MinJobs, CapacityScales: ci == vi, ConnectionLimit: limit,
		Notes: []string{}, Warnings: []string{}}
	if fi >= 0 {
		plan.Feeder = d.Tiers[fi].Name
	}
	if dbi >= 0 {
		plan.Database = d.Tiers[dbi].Name
	}

	// row computes the plan at n replicas of the varying tier.
	row := func(n int) ReplicaCount {
		dn := Deployment{Topology: d.Topology, Tiers: append([]Tier(nil), d.Tiers...)}
		dn.Tiers[vi].Replicas = n
		k := 1.0
		if plan.CapacityScales {
			k = float64(n) / float64(plan.Measured)
		}
		alloc, recs := RecommendAllocation(dn, resplit(dn, sz, k), reserve)
		rc := ReplicaCount{Replicas: n, Surge: sc.Surge.At(n), Allocation: alloc}
		r := recs[vi]
		rc.ThreadsPerReplica, rc.TotalThreads = r.ThreadsPerServer, r.TotalThreads
		perPod := func(i int) (int, bool) { // tier i's connections per server to the next tier
			switch {
			case dn.Tiers[i].Children:
				per := sz.Tiers[i].ConnectionsPerChild
				if per == 0 {
					per = DefaultConnectionsPerChild
				}
				return int(math.Ceil(withoutFloatError(float64(recs[i].ThreadsPerServer) * per))), true
			case recs[i].ConnectionsPerServer != nil:
				return *recs[i].ConnectionsPerServer, true
			}
			return 0, false
		}
		if c, ok := perPod(vi); ok {
			total := c * n
			rc.ConnectionsPerReplica, rc.TotalConnections = &c, &total
		}
		pods := func(i int) int { // tier i's servers during a rollout
			if i == vi {
				return n + rc.Surge
			}
			if s := dn.Tiers[i].Scaling; s != nil {
				return dn.Tiers[i].Replicas + s.Surge.At(dn.Tiers[i].Replicas)
			}
			return dn.Tiers[i].Replicas
		}
		clients := 0
		if fi >= 0 {
			c, _ := perPod(fi)
			clients = pods(fi) * c
			if fi == vi {
				rc.PeakConnections = &clients
			}
		}
		rc.DatabaseConnections = clients
		if pi >= 0 {
			pool := 0
			if p := recs[pi].ConnectionsPerServer; p != nil {
				pool = *p
			}
			rc.PoolerPoolSize, rc.PoolerReservePoolSize = pool, dn.Tiers[pi].ReservePoolSize
			rc.PoolerClientConnections = ceilDiv(clients, max(1, dn.Tiers[pi].Replicas))
			// The reserve opens only when clients wait, which is when the
			// database is busiest: max_connections must admit it.
			rc.DatabaseConnections = pods(pi) * (pool + rc.PoolerReservePoolSize)
		}
		rc.MaxConnections = rc.DatabaseConnections
		if limit != nil {
			rc.MaxConnections += limit.ReservedTotal()
		}
		if fits, known := plan.fits(d, pi, limit, rc); known {
			rc.Fits = &fits
		}
		return rc
	}
	for n := sc.Min; n <= sc.Max; n++ {
		plan.Counts = append(plan.Counts, row(n))
	}
	first, last := plan.Counts[0], plan.Counts[len(plan.Counts)-1]

	// The largest count up to which every count fits. A count opens at
	// least one connection a replica where it feeds what the limit
	// counts, so no count past the bound fits: the search ends there.
	if first.Fits != nil {
		bound := plan.Max
		if limit != nil {
			bound = max(bound, limit.Max)
		}
		if pi >= 0 && d.Tiers[pi].MaxClientConn > 0 {
			bound = max(bound, d.Tiers[pi].MaxClientConn*d.Tiers[pi].Replicas)
		}
		if vi != fi && !plan.CapacityScales {
			bound = sc.Max // the count changes no connection the limits count
		}
		// Counts at the range's bottom that do not fit (a surge of one
		// on a few replicas doubles them) are warned of; the answer is
		// where the fitting counts end.
		safe, started, bounded := 0, false, false
		for n := sc.Min; n <= bound+1; n++ {
			rc := first
			if n != sc.Min {
				rc = row(n)
			}
			if *rc.Fits {
				safe, started = n, true
			} else if started || n > sc.Max {
				bounded = true
				break
			}
		}
		if bounded {
			plan.SafeMaxReplicas = &safe
		}
	}
	plan.fixedPool(d, vi, fi, pi, limit, first, last, sc)
	plan.explain(d, sz, vi, ci, pi, sc, measured, first, last)
	return plan
}

// fits checks a count against the limits given: the database's
// max_connections, and a pooler's max_client_conn. known is false when
// neither is given.
func (p *ReplicaPlan) fits(d Deployment, pi int, limit *ConnectionLimit, rc ReplicaCount) (fits, known bool) {
	fits = true
	if limit != nil {
		known, fits = true, rc.MaxConnections <= limit.Max
	}
	if pi >= 0 && d.Tiers[pi].MaxClientConn > 0 {
		known, fits = true, fits && rc.PoolerClientConnections <= d.Tiers[pi].MaxClientConn
	}
	return fits, known
}

// clientBound is what the Feeder's connections may add up to at the peak:
// max_connections less what others reserve without a pooler, the poolers'
// max_client_conn with one; ok is false when no limit counts them.
func clientBound(d Deployment, pi int, limit *ConnectionLimit) (int, bool) {
	if pi >= 0 {
		if m := d.Tiers[pi].MaxClientConn; m > 0 {
			return m * d.Tiers[pi].Replicas, true
		}
		return 0, false
	}
	if limit == nil {
		return 0, false
	}
	return limit.Max - limit.ReservedTotal(), true
}

// fixedPool answers for a configuration that keeps the smallest count's
// pool at every count (an autoscaled Deployment whose pool size is a
// constant in its image or its environment).
func (p *ReplicaPlan) fixedPool(d Deployment, vi, fi, pi int, limit *ConnectionLimit, first, last ReplicaCount, sc Scaling) {
	bound, ok := clientBound(d, pi, limit)
	if !ok || fi != vi || first.ConnectionsPerReplica == nil {
		return
	}
	c := *first.ConnectionsPerReplica
	fp := &FixedPool{ConnectionsPerReplica: c}
	pods := func(n int) int { return n + sc.Surge.At(n) }
	for n := 1; pods(n)*c <= bound; n++ {
		fp.MaxReplicas = n
	}
	fp.LargestFitting = bound / pods(sc.Max)
	p.FixedPool = fp
	if fp.MaxReplicas < sc.Max && slicesFit(p.Counts) {
		what := fmt.Sprintf("max_connections %d less %d reserved", limit0(limit), reserved0(limit))
		if pi >= 0 {
			what = fmt.Sprintf("max_client_conn %d x %d %s servers", d.Tiers[pi].MaxClientConn, d.Tiers[pi].Replicas, d.Tiers[pi].Name)
		}
		msg := fmt.Sprintf("a %s pool of %d connections kept at every count (the %d-replica size) fits %s = %d connections up to %d replicas with surge %s, not %d: (%d + %d) x %d = %d",
			d.Tiers[vi].Name, c, sc.Min, what, bound, fp.MaxReplicas, sc.Surge, sc.Max, sc.Max, last.Surge, c, pods(sc.Max)*c)
		if fp.LargestFitting > 0 {
			msg += fmt.Sprintf("; size the pool per count (the table), or keep %d a replica, which fits the whole range", fp.LargestFitting)
		} else {
			msg += "; no pool size fits the range's top"
		}
		p.Warnings = append(p.Warnings, msg)
	}
}

// slicesFit is false when a count does not fit: its warning says more.
func slicesFit(counts []ReplicaCount) bool {
	for _, rc := range counts {
		if rc.Fits != nil && !*rc.Fits {
			return false
		}
	}
	return true
}

func limit0(l *ConnectionLimit) int {
	if l == nil {
		return 0
	}
	return l.Max
}

func reserved0(l *ConnectionLimit) int {
	if l == nil {
		return 0
	}
	return l.ReservedTotal()
}

// explain writes the plan's notes and warnings: what adding replicas does
// to capacity, and the counts that do not fit, with their numbers.
func (p *ReplicaPlan) explain(d Deployment, sz Sizing, vi, ci, pi int, sc Scaling, measured []TierMeasurement, first, last ReplicaCount) {
	vt := d.Tiers[vi]
	tp := ""
	for _, m := range measured {
		if m.Tier == p.Critical && m.Throughput > 0 {
			tp = fmt.Sprintf(" at %.4g requests/s", m.Throughput)
		}
	}
	switch {
	case sc.Min == sc.Max:
	case ci > vi:
		p.Notes = append(p.Notes, fmt.Sprintf("adding %s replicas adds no capacity: the critical tier %s sits behind them and saturates at minJobs %.1f concurrent jobs%s whatever the count; the replicas split the pools' totals (%s per replica at %d replicas, %s at %d): Formula 3's total stays %s, which the per-replica pools, rounded up, make %s",
			vt.Name, p.Critical, p.MinJobs, tp, perReplica(first), first.Replicas, perReplica(last), last.Replicas, formulaTotal(sz.Tiers[vi]), p.configuredTotals()))
	case ci < vi:
		p.Notes = append(p.Notes, fmt.Sprintf("adding %s replicas adds no capacity: the critical tier %s is in front of them (minJobs %.1f%s); the replicas split the jobs that reach them",
			vt.Name, p.Critical, p.MinJobs, tp))
	default:
		p.Notes = append(p.Notes, fmt.Sprintf("%s is the critical tier: each replica adds its capacity (minJobs %.1f at %d replicas%s, %.1f a replica); its totals grow with the count (%d threads at %d replicas, %d at %d), and so do the jobs that reach the tiers behind it; the model extrapolates from %d replicas: measure again near %d, where the critical resource may move behind it",
			vt.Name, p.MinJobs, p.Measured, tp, p.MinJobs/float64(p.Measured), first.TotalThreads, first.Replicas, last.TotalThreads, last.Replicas, p.Measured, sc.Max))
	}
	if pi >= 0 {
		pt := d.Tiers[pi]
		pp := &PoolerPlan{Tier: pt.Name, Replicas: pt.Replicas, ReservePoolSize: pt.ReservePoolSize, Configured: pt.MaxClientConn}
		for _, rc := range p.Counts {
			pp.DefaultPoolSize = max(pp.DefaultPoolSize, rc.PoolerPoolSize)
			pp.MaxClientConn = max(pp.MaxClientConn, rc.PoolerClientConnections)
		}
		pp.ServerConnections = (pp.DefaultPoolSize + pp.ReservePoolSize) * pt.Replicas
		p.Pooler = pp
		per := fmt.Sprintf("default_pool_size %d", pp.DefaultPoolSize)
		if pp.ReservePoolSize > 0 {
			per = fmt.Sprintf("(default_pool_size %d + reserve_pool_size %d)", pp.DefaultPoolSize, pp.ReservePoolSize)
		}
		p.Notes = append(p.Notes, fmt.Sprintf("with the pooler %s the database sees its server connections, %d x %s = %d, not the %s replicas' %s",
			pt.Name, pt.Replicas, per, pp.ServerConnections, p.Feeder, peakText(last)))
	}
	if sc.Min < sc.Max && sc.Surge == (Surge{}) {
		p.Notes = append(p.Notes, "no surge declared: a rolling update that starts new replicas before it stops old ones opens their pools too (Kubernetes' default maxSurge is 25%); declare surge")
	}
	// One warning a run of counts that do not fit, with the numbers of its
	// largest need.
	for i := 0; i < len(p.Counts); {
		if f := p.Counts[i].Fits; f == nil || *f {
			i++
			continue
		}
		j, worst := i, p.Counts[i]
		for j+1 < len(p.Counts) && !*p.Counts[j+1].Fits {
			j++
			if p.Counts[j].MaxConnections > worst.MaxConnections || p.Counts[j].PoolerClientConnections > worst.PoolerClientConnections {
				worst = p.Counts[j]
			}
		}
		span := strconv.Itoa(p.Counts[i].Replicas)
		if j > i {
			span += ".." + strconv.Itoa(p.Counts[j].Replicas)
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s %d..%d with surge %s does not fit at %s replicas: at %d, %s; %s",
			vt.Name, sc.Min, sc.Max, sc.Surge, span, worst.Replicas, p.why(d, pi, worst), p.safeText()))
		i = j + 1
	}
}

// why says with its numbers why a count does not fit.
func (p *ReplicaPlan) why(d Deployment, pi int, b ReplicaCount) string {
	var out []string
	if l := p.ConnectionLimit; l != nil && b.MaxConnections > l.Max {
		if pi < 0 && b.PeakConnections != nil && b.ConnectionsPerReplica != nil {
			out = append(out, fmt.Sprintf("(%d + %d surge) x %d connections + %d reserved = %d against max_connections %d",
				b.Replicas, b.Surge, *b.ConnectionsPerReplica, l.ReservedTotal(), b.MaxConnections, l.Max))
		} else {
			out = append(out, fmt.Sprintf("%d connections + %d reserved = %d against max_connections %d",
				b.DatabaseConnections, l.ReservedTotal(), b.MaxConnections, l.Max))
		}
	}
	if pi >= 0 && d.Tiers[pi].MaxClientConn > 0 && b.PoolerClientConnections > d.Tiers[pi].MaxClientConn {
		how := ""
		if b.ConnectionsPerReplica != nil && p.Feeder == p.Tier {
			how = fmt.Sprintf("(%d + %d surge) x %d = ", b.Replicas, b.Surge, *b.ConnectionsPerReplica)
			if n := d.Tiers[pi].Replicas; n > 1 {
				how = fmt.Sprintf("(%d + %d surge) x %d / %d = ", b.Replicas, b.Surge, *b.ConnectionsPerReplica, n)
			}
		}
		out = append(out, fmt.Sprintf("%s%d client connections per %s server against max_client_conn %d",
			how, b.PoolerClientConnections, d.Tiers[pi].Name, d.Tiers[pi].MaxClientConn))
	}
	return strings.Join(out, "; ")
}

func (p *ReplicaPlan) safeText() string {
	switch {
	case p.SafeMaxReplicas == nil:
		return "larger counts fit"
	case *p.SafeMaxReplicas == 0:
		return "no count fits"
	}
	return fmt.Sprintf("safe maxReplicas %d", *p.SafeMaxReplicas)
}

func perReplica(rc ReplicaCount) string {
	if rc.ConnectionsPerReplica != nil {
		return fmt.Sprintf("%d connections", *rc.ConnectionsPerReplica)
	}
	return fmt.Sprintf("%d threads", rc.ThreadsPerReplica)
}

func formulaTotal(ts TierSize) string {
	if ts.HasConnections {
		return fmt.Sprintf("%d connections", ts.TotalConnections)
	}
	return fmt.Sprintf("%d threads", ts.TotalThreads)
}

// configuredTotals is the range of the varying tier's totals over the counts.
func (p *ReplicaPlan) configuredTotals() string {
	lo, hi := math.MaxInt, 0
	for _, rc := range p.Counts {
		v := rc.TotalThreads
		if rc.TotalConnections != nil {
			v = *rc.TotalConnections
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

func peakText(rc ReplicaCount) string {
	if rc.PeakConnections != nil {
		return fmt.Sprintf("%d at %d replicas with surge", *rc.PeakConnections, rc.Replicas)
	}
	return "connections"
}

// resplit is the sizing at another count of d's tiers: every tier's jobs
// times k (1: the budget is fixed), rounded and split over the replicas
// as CalculateMinAllocation does.
func resplit(d Deployment, sz Sizing, k float64) Sizing {
	out := sz
	out.Tiers = make([]TierSize, len(sz.Tiers))
	for i, ts := range sz.Tiers {
		ts.Replicas = d.Tiers[i].Replicas
		ts.Jobs *= k
		splitTier(&ts, ts.Replicas)
		out.Tiers[i] = ts
	}
	return out
}

// splitTier rounds a tier's jobs to its total pool (at least 1) and splits
// it over replicas, rounding up: CalculateMinAllocation's last step.
func splitTier(ts *TierSize, replicas int) {
	ts.TotalThreads = max(1, int(math.Round(withoutFloatError(ts.Jobs))))
	ts.ThreadsPerServer = ceilDiv(ts.TotalThreads, max(1, replicas))
	if ts.HasConnections {
		ts.TotalConnections, ts.ConnectionsPerServer = ts.TotalThreads, ts.ThreadsPerServer
	}
}
