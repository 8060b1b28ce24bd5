package algorithms

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Tier roles of the RUBBoS chain. A deployment file may name tiers freely,
// but the role says how a tier behaves (which pools it has, what it calls).
const (
	RoleWeb     = "web"
	RoleApp     = "app"
	RoleCluster = "cluster"
	RoleDB      = "db"
)

// Pool names. Every tier has at most a thread pool and a connection pool
// (connections to the next tier down).
const (
	PoolThreads     = "threads"
	PoolConnections = "connections"
)

// PoolChildren is the deployment file's name for the pool of a tier whose
// workers are processes that each open their own connections to the next
// tier (php-fpm's children): one pool that is both the tier's workers and
// its connections. The model keeps it as the tier's threads (it bounds the
// tier's concurrent jobs as a thread pool does) and marks the tier
// Children, so that the algorithms, journals and hooks of thread pools
// apply unchanged and the next tier's connection limit is derived from it
// (MaxConnections) instead of being a pool of its own.
const PoolChildren = "children"

// PoolPermits is the deployment file's name for the pool of a tier on
// virtual threads: with a thread per request the thread pool bounds nothing,
// and the jobs inside the tier are bounded by a concurrency limit, a
// semaphore of permits (a servlet filter, Spring's concurrency throttle,
// Quarkus's or Jetty's limit). The model keeps the permits as the tier's
// threads, as it keeps php-fpm's children, and marks the tier Permits; its
// connections stay a pool of their own.
const PoolPermits = "permits"

// What a tier runs (Tier.Software): it chooses the config snippets and
// validate's named baselines, which mean nothing for other software.
const (
	SoftwareApache     = "apache"
	SoftwareNginx      = "nginx"
	SoftwarePHPFPM     = "php-fpm"
	SoftwareTomcat     = "tomcat"
	SoftwareHikari     = "hikari" // a JVM application whose DB pool is HikariCP
	SoftwareGo         = "go"
	SoftwareMariaDB    = "mariadb"
	SoftwareMySQL      = "mysql"
	SoftwarePostgreSQL = "postgresql"
	SoftwarePgBouncer  = "pgbouncer"
)

// KnownSoftware lists the values Tier.Software takes.
var KnownSoftware = []string{SoftwareApache, SoftwareNginx, SoftwarePHPFPM, SoftwareTomcat, SoftwareHikari,
	SoftwareGo, SoftwareMariaDB, SoftwareMySQL, SoftwarePostgreSQL, SoftwarePgBouncer}

// Tier is one tier of an n-tier chain: a set of identical replicated servers.
type Tier struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Replicas int      `json:"replicas"`
	Cores    int      `json:"cores"`
	Pools    []string `json:"pools,omitempty"` // the pools an allocation sets, in order
	// Software is what the tier's servers run (one of KnownSoftware), or
	// empty: unknown, and snippets and baselines go by role as before.
	Software string `json:"software,omitempty"`
	// Children says the tier's threads are worker processes that each hold
	// their own connections to the next tier (PoolChildren).
	Children bool `json:"children,omitempty"`
	// Permits says the tier's threads are the permits of a concurrency limit
	// in front of virtual threads (PoolPermits).
	Permits bool `json:"permits,omitempty"`
	// Scaling is the tier's replica range and rollout surge when the
	// deployment gives them (nil: a fixed count and no surge); Replicas is
	// then the range's lower end, where experiments run (replicas.go).
	Scaling *Scaling `json:"scaling,omitempty"`
	// ConnectionLimit is a db tier's max_connections per server and what
	// others hold of it (nil: not given).
	ConnectionLimit *ConnectionLimit `json:"connectionLimit,omitempty"`
	// MaxClientConn is a pooler tier's limit of client connections per
	// server (PgBouncer's max_client_conn) as configured, 0: not given. It
	// is a limit to check, not a pool of jobs: the pooler's jobs are its
	// server connections (PoolConnections, default_pool_size).
	MaxClientConn int `json:"maxClientConn,omitempty"`
	// ReservePoolSize is a pooler tier's reserve per pool as configured
	// (PgBouncer's reserve_pool_size, 0: none): server connections a pool
	// adds when a client has waited reserve_pool_timeout, which the
	// database must admit beside default_pool_size. A setting softalloc
	// counts, not a pool it sizes.
	ReservePoolSize int `json:"reservePoolSize,omitempty"`
}

// PoolLabel names one of the tier's pools for people: "php-fpm children"
// for a php-fpm tier's workers, "children" for another children tier's,
// "permits" for a virtual-thread tier's limit, else the pool's name.
func (t Tier) PoolLabel(pool string) string {
	if pool == PoolThreads && t.Permits {
		return PoolPermits
	}
	if pool == PoolThreads && t.Children {
		if t.Software == SoftwarePHPFPM {
			return "php-fpm children"
		}
		return PoolChildren
	}
	return pool
}

// HasPool reports whether the tier's allocation sets the named pool.
func (t Tier) HasPool(pool string) bool {
	for _, p := range t.Pools {
		if p == pool {
			return true
		}
	}
	return false
}

// ServerName names the i-th server (0-based) of the tier: "app-1", "app-2", ...
func (t Tier) ServerName(i int) string { return fmt.Sprintf("%s-%d", t.Name, i+1) }

// Deployment is the hardware side of an experiment: a chain of tiers, front first.
type Deployment struct {
	// Topology is the short notation ("1/2/1/2") when the deployment came from
	// one, or the deployment's own name.
	Topology string `json:"topology"`
	Tiers    []Tier `json:"tiers"`
}

// Tier returns the tier with the given name.
func (d Deployment) Tier(name string) (Tier, bool) {
	for _, t := range d.Tiers {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}

// TierIndex returns the position of the named tier in the chain, or -1.
func (d Deployment) TierIndex(name string) int {
	for i, t := range d.Tiers {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// TierPools holds the pool sizes of one tier, per server. Zero means the tier
// has no such pool of its own (a C-JDBC or MySQL thread exists per upstream
// DB connection, so those tiers take their concurrency from the app tier).
type TierPools struct {
	Threads     int `json:"threads,omitempty"`
	Connections int `json:"connections,omitempty"`
}

// Size returns the size of the named pool.
func (p TierPools) Size(pool string) int {
	switch pool {
	case PoolThreads:
		return p.Threads
	case PoolConnections:
		return p.Connections
	}
	return 0
}

// Allocation sets the size of every soft-resource pool, per server, keyed by
// tier name. The paper's 400-150-60 is {web: {400}, app: {150, 60}}.
type Allocation map[string]TierPools

// Clone returns an independent copy.
func (a Allocation) Clone() Allocation {
	c := make(Allocation, len(a))
	for k, v := range a {
		c[k] = v
	}
	return c
}

// Scaled multiplies every pool by f, as Algorithm 1's S = 2S does.
func (a Allocation) Scaled(f int) Allocation {
	c := make(Allocation, len(a))
	for k, v := range a {
		c[k] = TierPools{Threads: v.Threads * f, Connections: v.Connections * f}
	}
	return c
}

// String is the paper's notation, "400-150-60" (web threads, app threads,
// app connections), for an allocation of those pools alone, and Key for any
// other: what a message names an allocation by.
func (a Allocation) String() string {
	web, app := a["web"], a["app"]
	if len(a) == 2 && web.Threads > 0 && web.Connections == 0 && app.Threads > 0 && app.Connections > 0 {
		return fmt.Sprintf("%d-%d-%d", web.Threads, app.Threads, app.Connections)
	}
	return a.Key()
}

// Key is a canonical, order-independent text of the allocation, for journals
// and maps: "app:threads=150,connections=60;web:threads=400".
func (a Allocation) Key() string {
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(';')
		}
		p := a[n]
		fmt.Fprintf(&b, "%s:threads=%d,connections=%d", n, p.Threads, p.Connections)
	}
	return b.String()
}

// Workload is the offered load of an experiment: emulated users of a closed
// system (each thinks, sends a page request, waits for it, repeats).
type Workload struct {
	Users int `json:"users"`
}

// Timing is a trial's schedule. Measurements are taken during Runtime only.
//
// With Precision above 0 the trial is adaptive: RampUp is the least
// warm-up (the end of the transient is found in the data, MSER5), Runtime
// the longest window, and the window ends as soon as the 95% confidence
// interval of every figure (throughput, goodput at each of SLAs, each
// server's CPU, each pool's busy units) is within Precision of its mean
// (Stopping). Precision 0 is a fixed trial of RampUp and Runtime.
type Timing struct {
	RampUp   time.Duration
	Runtime  time.Duration
	RampDown time.Duration
	// Precision is the relative half-width an adaptive trial runs to.
	Precision float64
	// SLAs are the response-time thresholds (seconds) at which goodput is
	// measured with an interval, ascending.
	SLAs []float64
	// GoodputOnly holds an adaptive trial to the precision on throughput
	// and goodput alone: a comparison of allocations reads nothing else,
	// and past saturation the app servers' busy threads wander by 10-20%
	// of the pool for minutes, which held most grid trials to their
	// longest window. The servers' figures still get their intervals.
	GoodputOnly bool
}

// Adaptive says the trial ends at a precision rather than after Runtime.
func (t Timing) Adaptive() bool { return t.Precision > 0 }

// CheckAdaptive checks the precision and the SLA thresholds.
func (t Timing) CheckAdaptive() error {
	if !(t.Precision >= 0 && t.Precision < 1) {
		return fmt.Errorf("timing: precision %g: want a relative half-width in [0,1) (0: a fixed trial)", t.Precision)
	}
	for i, s := range t.SLAs {
		if !(s > 0) || math.IsInf(s, 0) || (i > 0 && !(s > t.SLAs[i-1])) {
			return fmt.Errorf("timing: SLA thresholds %v: want ascending numbers of seconds > 0", t.SLAs)
		}
	}
	return nil
}

// PaperTiming is the paper's trial: 8 min ramp-up, 12 min runtime, 30 s ramp-down.
var PaperTiming = Timing{RampUp: 8 * time.Minute, Runtime: 12 * time.Minute, RampDown: 30 * time.Second}

// Total is the whole length of a trial.
func (t Timing) Total() time.Duration { return t.RampUp + t.Runtime + t.RampDown }

type timingJSON struct {
	RampUp      float64   `json:"rampUpSeconds"`
	Runtime     float64   `json:"runtimeSeconds"`
	RampDown    float64   `json:"rampDownSeconds"`
	Precision   float64   `json:"precision,omitempty"`
	SLAs        []float64 `json:"slas,omitempty"`
	GoodputOnly bool      `json:"goodputOnly,omitempty"`
}

// MarshalJSON writes seconds, which scripts read more easily than nanoseconds.
func (t Timing) MarshalJSON() ([]byte, error) {
	return json.Marshal(timingJSON{t.RampUp.Seconds(), t.Runtime.Seconds(), t.RampDown.Seconds(), t.Precision, t.SLAs, t.GoodputOnly})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (t *Timing) UnmarshalJSON(b []byte) error {
	var j timingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	// A time.Duration ends at about 292 years; a larger float converts to
	// whatever the platform gives, a negative runtime on amd64.
	const most = float64(math.MaxInt64) / float64(time.Second)
	if !(j.RampUp >= 0 && j.RampUp < most) || !(j.Runtime > 0 && j.Runtime < most) || !(j.RampDown >= 0 && j.RampDown < most) {
		return fmt.Errorf("timing: want rampUpSeconds >= 0, runtimeSeconds > 0, rampDownSeconds >= 0, each below %.0f, got %g, %g, %g",
			most, j.RampUp, j.Runtime, j.RampDown)
	}
	*t = Timing{
		RampUp:      time.Duration(j.RampUp * float64(time.Second)),
		Runtime:     time.Duration(j.Runtime * float64(time.Second)),
		RampDown:    time.Duration(j.RampDown * float64(time.Second)),
		Precision:   j.Precision,
		SLAs:        j.SLAs,
		GoodputOnly: j.GoodputOnly,
	}
	return t.CheckAdaptive()
}

// Experiment is one trial: hardware, soft-resource allocation, load and schedule.
type Experiment struct {
	Deployment Deployment `json:"deployment"`
	Allocation Allocation `json:"allocation"`
	Workload   Workload   `json:"workload"`
	Timing     Timing     `json:"timing"`
}
