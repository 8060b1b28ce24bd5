package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
)

// The snippet formats of a replica range's pooler and database.
const (
	FormatPgBouncer  = "pgbouncer"
	FormatPostgreSQL = "postgresql"
)

// writeReplicaPlan prints the answer for a replica range: one row per run
// of counts whose per-replica pools agree (a range of 451 counts is a few
// rows; --output json has every count), then the safe maxReplicas, the
// answer for one pool kept at every count, the pooler's settings, and the
// plan's notes and warnings.
func writeReplicaPlan(w io.Writer, p *algorithms.ReplicaPlan) {
	if p == nil || len(p.Counts) == 0 {
		return
	}
	esc := oneline.Escape
	fmt.Fprintf(w, "\nreplicas of %s: %d..%d, surge %s, measured at %d; critical %s, minJobs %.1f\n",
		esc(p.Tier), p.Min, p.Max, p.Surge, p.Measured, esc(p.Critical), p.MinJobs)
	if l := p.ConnectionLimit; l != nil {
		fmt.Fprintf(w, "database %s: max_connections %d, reserved %d%s\n", esc(p.Database), l.Max, l.ReservedTotal(), reservedText(l))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"replicas", "surge", "threads/replica", "connections/replica", "connections", "peak"}
	if p.Pooler != nil {
		head = append(head, "default_pool_size", "clients/pooler")
	}
	head = append(head, "database sees", "max_connections", "fits")
	fmt.Fprintln(tw, "  "+strings.Join(head, "\t"))
	for _, g := range groupCounts(p.Counts) {
		a, b := g[0], g[len(g)-1]
		span := func(f func(algorithms.ReplicaCount) int) string {
			x, y := f(a), f(b)
			if x == y {
				return strconv.Itoa(x)
			}
			return fmt.Sprintf("%d..%d", x, y)
		}
		opt := func(f func(algorithms.ReplicaCount) *int) string {
			if f(a) == nil {
				return "-"
			}
			return span(func(rc algorithms.ReplicaCount) int { return *f(rc) })
		}
		row := []string{span(func(rc algorithms.ReplicaCount) int { return rc.Replicas }),
			span(func(rc algorithms.ReplicaCount) int { return rc.Surge }),
			strconv.Itoa(a.ThreadsPerReplica),
			opt(func(rc algorithms.ReplicaCount) *int { return rc.ConnectionsPerReplica }),
			opt(func(rc algorithms.ReplicaCount) *int { return rc.TotalConnections }),
			opt(func(rc algorithms.ReplicaCount) *int { return rc.PeakConnections })}
		if p.Pooler != nil {
			row = append(row, strconv.Itoa(a.PoolerPoolSize), span(func(rc algorithms.ReplicaCount) int { return rc.PoolerClientConnections }))
		}
		fits := "-"
		if a.Fits != nil {
			fits = map[bool]string{true: "yes", false: "NO"}[*a.Fits]
		}
		row = append(row, span(func(rc algorithms.ReplicaCount) int { return rc.DatabaseConnections }),
			span(func(rc algorithms.ReplicaCount) int { return rc.MaxConnections }), fits)
		fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
	}
	tw.Flush()
	switch {
	case p.SafeMaxReplicas == nil && p.Counts[0].Fits != nil:
		fmt.Fprintf(w, "safe maxReplicas: not bounded by the limits given\n")
	case p.SafeMaxReplicas != nil:
		fmt.Fprintf(w, "safe maxReplicas: %d (with each count's pools, surge included)\n", *p.SafeMaxReplicas)
	}
	if f := p.FixedPool; f != nil {
		fmt.Fprintf(w, "one pool at every count: %d connections a replica (the %d-replica size) fits up to %d replicas; the largest that fits the whole range is %d\n",
			f.ConnectionsPerReplica, p.Min, f.MaxReplicas, f.LargestFitting)
	}
	if q := p.Pooler; q != nil {
		conf := ""
		if q.Configured > 0 {
			conf = fmt.Sprintf(" (configured %d)", q.Configured)
		}
		reserve := ""
		if q.ReservePoolSize > 0 {
			reserve = fmt.Sprintf(" + reserve_pool_size %d", q.ReservePoolSize)
		}
		fmt.Fprintf(w, "pooler %s (%d servers): default_pool_size %d%s (the database sees %d), max_client_conn at least %d%s\n",
			esc(q.Tier), q.Replicas, q.DefaultPoolSize, reserve, q.ServerConnections, q.MaxClientConn, conf)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
	for _, n := range p.Warnings {
		fmt.Fprintf(w, "  ! %s\n", n)
	}
}

func reservedText(l *algorithms.ConnectionLimit) string {
	if len(l.Reserved) == 0 {
		return ""
	}
	parts := make([]string, len(l.Reserved))
	for i, r := range l.Reserved {
		parts[i] = fmt.Sprintf("%s %d", oneline.Escape(r.Name), r.Connections)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// groupCounts splits the counts into runs whose per-replica pools, pooler
// pool and verdict agree.
func groupCounts(counts []algorithms.ReplicaCount) [][]algorithms.ReplicaCount {
	key := func(rc algorithms.ReplicaCount) string {
		c, f := -1, "-"
		if rc.ConnectionsPerReplica != nil {
			c = *rc.ConnectionsPerReplica
		}
		if rc.Fits != nil {
			f = strconv.FormatBool(*rc.Fits)
		}
		return fmt.Sprintf("%d/%d/%d/%s", rc.ThreadsPerReplica, c, rc.PoolerPoolSize, f)
	}
	var out [][]algorithms.ReplicaCount
	for i, rc := range counts {
		if i > 0 && key(rc) == key(counts[i-1]) {
			out[len(out)-1] = append(out[len(out)-1], rc)
			continue
		}
		out = append(out, []algorithms.ReplicaCount{rc})
	}
	return out
}

// ReplicaSnippets are the configuration for a replica range, for the
// formats asked: HikariCP's maximumPoolSize per replica count (and one
// size for every count), PgBouncer's default_pool_size and
// max_client_conn, and PostgreSQL's max_connections.
func ReplicaSnippets(d algorithms.Deployment, p *algorithms.ReplicaPlan, formats []string) []Snippet {
	if p == nil || len(p.Counts) == 0 {
		return nil
	}
	var out []Snippet
	vt, _ := d.Tier(p.Tier)
	for _, f := range formats {
		switch {
		case f == "hikari" && runs(vt, "hikari") && p.Counts[0].ConnectionsPerReplica != nil:
			out = append(out, hikariRangeSnippet(vt, p))
		case f == FormatPgBouncer && p.Pooler != nil:
			out = append(out, pgbouncerSnippet(p))
		case f == FormatPostgreSQL:
			if t, ok := d.Tier(p.Database); ok && (t.Software == algorithms.SoftwarePostgreSQL || t.Software == "" && p.Pooler != nil) {
				out = append(out, postgresRangeSnippet(t, p))
			}
		}
	}
	return out
}

func rangeServers(p *algorithms.ReplicaPlan) string {
	return fmt.Sprintf("each replica of %s, %d..%d", p.Tier, p.Min, p.Max)
}

func hikariRangeSnippet(t algorithms.Tier, p *algorithms.ReplicaPlan) Snippet {
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: app tier %q, %d..%d replicas (surge %s): HikariCP maximumPoolSize per replica by count:\n", t.Name, p.Min, p.Max, p.Surge)
	for _, g := range groupCounts(p.Counts) {
		n := fmt.Sprintf("%d", g[0].Replicas)
		if len(g) > 1 {
			n += fmt.Sprintf("..%d", g[len(g)-1].Replicas)
		}
		fits := ""
		if g[0].Fits != nil && !*g[0].Fits {
			fits = " (does not fit the limits: softalloc's warning says why)"
		}
		fmt.Fprintf(&b, "#   %s replicas: %d%s\n", n, *g[0].ConnectionsPerReplica, fits)
	}
	size, why := *p.Counts[0].ConnectionsPerReplica, fmt.Sprintf("the %d-replica size; no limit given bounds it", p.Min)
	if f := p.FixedPool; f != nil {
		if f.MaxReplicas >= p.Max {
			why = fmt.Sprintf("the %d-replica size, which fits up to %d replicas", p.Min, f.MaxReplicas)
		} else {
			size, why = f.LargestFitting, fmt.Sprintf("the largest that fits %d replicas with surge; the %d-replica size %d fits up to %d", p.Max, p.Min, f.ConnectionsPerReplica, f.MaxReplicas)
		}
	}
	fmt.Fprintf(&b, "# Set it from the replica count where the platform allows; else one size for every count (%s):\n", why)
	fmt.Fprintf(&b, "spring.datasource.hikari.maximum-pool-size=%d\nspring.datasource.hikari.minimum-idle=%d\n", size, size)
	return Snippet{Format: "hikari", Tier: t.Name, Servers: rangeServers(p), File: "application.properties (Spring Boot)", Text: b.String()}
}

func pgbouncerSnippet(p *algorithms.ReplicaPlan) Snippet {
	q := p.Pooler
	var b strings.Builder
	per := "default_pool_size"
	if q.ReservePoolSize > 0 {
		per = "(default_pool_size + reserve_pool_size)"
	}
	fmt.Fprintf(&b, "; softalloc: pooler %q, %d servers: the database sees %d x %s = %d server connections;\n",
		q.Tier, q.Replicas, q.Replicas, per, q.ServerConnections)
	fmt.Fprintf(&b, "; max_client_conn takes every client connection of %s at %d replicas with surge %s, spread over %d servers.\n",
		p.Tier, p.Max, p.Surge, q.Replicas)
	if q.Configured > 0 && q.Configured < q.MaxClientConn {
		fmt.Fprintf(&b, "; The configured max_client_conn %d is too few for the range's top.\n", q.Configured)
	}
	fmt.Fprintf(&b, "[pgbouncer]\ndefault_pool_size = %d\n", q.DefaultPoolSize)
	if q.ReservePoolSize > 0 {
		// The reserve the database's budget counted.
		fmt.Fprintf(&b, "reserve_pool_size = %d\n", q.ReservePoolSize)
	}
	fmt.Fprintf(&b, "max_client_conn = %d\n", q.MaxClientConn)
	return Snippet{Format: FormatPgBouncer, Tier: q.Tier, Servers: fmt.Sprintf("each of %d", q.Replicas), File: "/etc/pgbouncer/pgbouncer.ini", Text: b.String()}
}

func postgresRangeSnippet(t algorithms.Tier, p *algorithms.ReplicaPlan) Snippet {
	need, at := 0, p.Counts[0]
	for _, rc := range p.Counts {
		if rc.MaxConnections > need {
			need, at = rc.MaxConnections, rc
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: db tier %q, %s at %d..%d replicas (surge %s): at most %d connections (at %d replicas)",
		t.Name, p.Tier, p.Min, p.Max, p.Surge, at.DatabaseConnections, at.Replicas)
	if l := p.ConnectionLimit; l != nil {
		fmt.Fprintf(&b, " + %d reserved%s", l.ReservedTotal(), reservedText(l))
	}
	fmt.Fprintf(&b, ".\n")
	if l := p.ConnectionLimit; l != nil && need > l.Max {
		fmt.Fprintf(&b, "# That is above the limit of %d the deployment file gives: raise it, or narrow the range.\n", l.Max)
	}
	fmt.Fprintf(&b, "max_connections = %d\n", need)
	return Snippet{Format: FormatPostgreSQL, Tier: t.Name, Servers: serverRange(t), File: "postgresql.conf (a restart applies it)", Text: b.String()}
}
