// Package discover proposes a deployment file from what a Prometheus scrapes:
// which exporters answer, which servers they watch, the tiers those servers
// make in chain order, each tier's presets and current pool sizes, and what
// it could not find and the user must decide.
package discover

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/softalloc/softalloc/internal/runner/live"
)

// A signature is a metric only one kind of exporter (or instrumented
// library) writes: a target that has it runs that software.
type signature struct {
	kind   string // what runs: the live runner's preset of the same name where there is one
	metric string
	role   string // web, app, pooler or db; "" for a CPU source, which watches servers rather than being one
	about  string
}

// signatures are checked in this order; a target may match several (one JVM
// serves Tomcat's, HikariCP's and the JVM's metrics).
var signatures = []signature{
	{"apache", "apache_accesses_total", "web", "Apache httpd through apache_exporter"},
	{"nginx", "nginx_http_requests_total", "web", "nginx through nginx-prometheus-exporter"},
	{"tomcat", "tomcat_threads_config_max_threads", "app", "Tomcat through Micrometer"},
	{"hikari", "hikaricp_connections_max", "app", "HikariCP through Micrometer"},
	{"jvm", "jvm_gc_pause_seconds_count", "app", "a JVM through Micrometer"},
	{"phpfpm", "phpfpm_total_processes", "app", "php-fpm's status page"},
	{"bboard", "bboard_pool_size", "app", "the testbed's bulletin board"},
	{"mysql", "mysql_up", "db", "MySQL or MariaDB through mysqld_exporter"},
	{"postgres", "pg_up", "db", "PostgreSQL through postgres_exporter"},
	// Not pgbouncer_up, which the prometheus-community Go exporter (whose
	// names the pgbouncer preset does not read) exports too, and 2.1.2 as 0
	// when it cannot read PgBouncer: the transactions' time, which only
	// prometheus-pgbouncer-exporter 2.x on PgBouncer 1.8 or later exports.
	{"pgbouncer", pgbouncerMetric, "pooler", "PgBouncer through prometheus-pgbouncer-exporter 2.x"},
	{"node", "node_cpu_seconds_total", "", "node_exporter (a host's CPU)"},
	{"process-exporter", "namedprocess_namegroup_cpu_seconds_total", "", "process-exporter (CPU per process group)"},
	{"cadvisor", "container_cpu_usage_seconds_total", "", "cAdvisor or the kubelet (CPU per container)"},
	{"cgroup", "softalloc_testbed_cpu_usage_seconds_total", "", "the testbed's cgroup exporter (CPU per tier)"},
}

// source is one series of a CPU source: who reports it and by which labels.
type source struct {
	kind, instance string
	labels         model.LabelSet
}

// roleOrder is the chain's order: requests flow from web to db, through
// a pooler in front of the database.
var roleOrder = map[string]int{"web": 0, "app": 1, "pooler": 2, "db": 3}

// pgbouncerMetric is the pgbouncer preset's exporter's signature.
const pgbouncerMetric = "pgbouncer_stats_transactions_duration_microseconds_total"

// Target is one scraped endpoint and what it runs.
type Target struct {
	Job      string   `json:"job"`
	Instance string   `json:"instance"`
	Up       bool     `json:"up"`
	Kinds    []string `json:"kinds,omitempty"`
}

// Tier is a proposed tier of the deployment.
type Tier struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Software is the kind of exporter found; Deploys the deployment
	// file's name of that software ("" where it has none: the testbed's app).
	Software string `json:"kind"`
	Deploys  string `json:"software,omitempty"`
	// Presets in the order the live runner applies them (later ones win).
	Presets []string `json:"presets"`
	// Servers are the placeholder values of each server, {instance} first.
	Servers []map[string]string `json:"servers"`
	// Pools are the sizes read now (the allocation a campaign starts from),
	// per server.
	Pools map[string]int `json:"pools,omitempty"`
	// MaxClientConn is a pooler's limit of client connections now, per
	// server: a limit the tiers in front must fit, not a pool.
	MaxClientConn int `json:"maxClientConn,omitempty"`
	// ReservePoolSize is a pooler's reserve_pool_size now: server
	// connections a pool adds when clients wait, which the database's
	// budget counts (0: none).
	ReservePoolSize int `json:"reservePoolSize,omitempty"`
	// Queries override the presets' (the db tier's response time read from
	// the app, where the app measures it).
	Queries map[string]string `json:"queries,omitempty"`
	// Notes say what could not be found for this tier.
	Notes []string `json:"notes,omitempty"`
}

// Proposal is what Discover found.
type Proposal struct {
	Prometheus string   `json:"prometheus"`
	Targets    []Target `json:"targets"`
	Tiers      []Tier   `json:"tiers"`
	// Decide lists what the metrics cannot tell and the user must.
	Decide []string `json:"decide,omitempty"`
}

// querier is the part of Prometheus's API Discover uses.
type querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// Discover asks the Prometheus at address what it scrapes and proposes tiers.
func Discover(ctx context.Context, address string, rt http.RoundTripper) (Proposal, error) {
	c, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return Proposal{}, fmt.Errorf("prometheus %q: %w", address, err)
	}
	p, err := discover(ctx, v1.NewAPI(c), time.Now())
	p.Prometheus = address
	return p, err
}

func discover(ctx context.Context, q querier, now time.Time) (Proposal, error) {
	vector := func(query string) (model.Vector, error) {
		v, _, _, err := q.Query(ctx, query, now)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", query, err)
		}
		vec, ok := v.(model.Vector)
		if !ok {
			return nil, fmt.Errorf("query %s: a %s; want an instant vector", query, v.Type())
		}
		return vec, nil
	}
	up, err := vector("up")
	if err != nil {
		return Proposal{}, err
	}
	if len(up) == 0 {
		return Proposal{}, fmt.Errorf("the Prometheus scrapes nothing (the query up returned no series): add the exporters' targets to its scrape configuration")
	}
	var p Proposal
	for _, s := range up {
		p.Targets = append(p.Targets, Target{Job: string(s.Metric["job"]), Instance: string(s.Metric["instance"]), Up: s.Value == 1})
	}
	sort.Slice(p.Targets, func(i, j int) bool { return p.Targets[i].Instance < p.Targets[j].Instance })
	byInstance := map[string]int{} // index in p.Targets
	for i, t := range p.Targets {
		byInstance[t.Instance] = i
	}
	var sources []source
	for _, sig := range signatures {
		vec, err := vector(fmt.Sprintf("group by (instance, tier, groupname, name) (%s)", sig.metric))
		if err != nil {
			return Proposal{}, err
		}
		seen := map[string]bool{}
		for _, s := range vec {
			inst := string(s.Metric["instance"])
			if sig.role == "" {
				sources = append(sources, source{kind: sig.kind, instance: inst, labels: model.LabelSet(s.Metric)})
			}
			if seen[inst] {
				continue
			}
			seen[inst] = true
			if i, ok := byInstance[inst]; ok {
				p.Targets[i].Kinds = append(p.Targets[i].Kinds, sig.kind)
			}
		}
	}

	// Servers by software: the first kind with a role names what a target is.
	bySoftware := map[string][]Target{}
	var softwares []string
	for _, t := range p.Targets {
		sw, role := software(t.Kinds)
		if role == "" {
			continue
		}
		if !t.Up {
			p.Decide = append(p.Decide, fmt.Sprintf("target %s (job %s) runs %s but is down: it is left out; bring it up and run init again", t.Instance, t.Job, sw))
			continue
		}
		if _, ok := bySoftware[sw]; !ok {
			softwares = append(softwares, sw)
		}
		bySoftware[sw] = append(bySoftware[sw], t)
	}
	if len(softwares) == 0 {
		return p, fmt.Errorf("none of the %d targets runs a server softalloc knows (%s): nothing to size", len(p.Targets), knownServers())
	}
	sort.SliceStable(softwares, func(i, j int) bool {
		ri, rj := roleOrder[roleOf(softwares[i])], roleOrder[roleOf(softwares[j])]
		if ri != rj {
			return ri < rj
		}
		return softwares[i] < softwares[j]
	})
	names := map[string]int{}
	for _, sw := range softwares {
		names[roleOf(sw)]++
	}
	for _, sw := range softwares {
		role := roleOf(sw)
		name := role
		if names[role] > 1 {
			name = sw // two kinds in one role: the tiers take the software's names
			p.Decide = append(p.Decide, fmt.Sprintf("two %s tiers (%s): the metrics do not say which calls which; put them in the chain's order", role, strings.Join(sameRole(softwares, role), ", ")))
		}
		t := Tier{Name: name, Role: role, Software: sw}
		targets := bySoftware[sw]
		for _, tg := range targets {
			t.Servers = append(t.Servers, map[string]string{"instance": tg.Instance})
		}
		// Presets: the app's own (jvm before the others, whose CPU wins), then the kinds.
		kinds := targets[0].Kinds
		for _, k := range []string{"jvm"} {
			if slices.Contains(kinds, k) {
				t.Presets = append(t.Presets, k)
			}
		}
		t.Presets = append(t.Presets, cpuPresets(&t, sources)...)
		for _, k := range kinds {
			if k != "jvm" && roleOf(k) != "" && preset(k) {
				t.Presets = append(t.Presets, k)
			}
		}
		p.Tiers = append(p.Tiers, t)
	}
	// Pools now, and the db tier's latency.
	for i := range p.Tiers {
		if err := readPools(&p.Tiers[i], vector); err != nil {
			return p, err
		}
		// A database's max_connections is a pool softalloc sets only behind
		// php-fpm's children, where it follows from them.
		if t := &p.Tiers[i]; t.Role == "db" && (i == 0 || p.Tiers[i-1].Software != "phpfpm") {
			delete(t.Pools, "connections")
		}
		if err := softwareOf(&p.Tiers[i], vector); err != nil {
			return p, err
		}
		if t := &p.Tiers[i]; t.Role == "db" && i > 0 && p.Tiers[i-1].Role == "pooler" {
			if err := behindPooler(&p, t, p.Tiers[i-1].Name, vector); err != nil {
				return p, err
			}
		}
		switch p.Tiers[i].Software {
		case "postgres":
			if err := pgDatabases(&p, &p.Tiers[i], vector); err != nil {
				return p, err
			}
		case "pgbouncer":
			if err := pgbouncerPools(&p, &p.Tiers[i], vector); err != nil {
				return p, err
			}
		}
	}
	if err := otherPgBouncerExporters(&p, vector); err != nil {
		return p, err
	}
	if err := dbLatency(&p, vector); err != nil {
		return p, err
	}
	shareNoHost(p.Tiers)
	for _, t := range p.Tiers {
		if !hasCPU(t) && t.Software == "pgbouncer" {
			p.Decide = append(p.Decide, fmt.Sprintf("tier %s: PgBouncer exports no CPU, and no cgroup exporter reports tier=%q: add a cpu query (the process-exporter or node preset; "+
				"vector(0) when it runs in the database's cgroup or host and its CPU counts there, as in testbed/deployment-pgbouncer.yaml)", t.Name, t.Name))
			continue
		}
		if !hasCPU(t) {
			p.Decide = append(p.Decide, fmt.Sprintf("tier %s: no CPU source found (no cgroup exporter with tier=%q, no node_exporter on a host of its own): add a cpu query (see softalloc presets)", t.Name, t.Name))
		}
	}
	return p, nil
}

func roleOf(kind string) string {
	for _, s := range signatures {
		if s.kind == kind {
			return s.role
		}
	}
	return ""
}

// software names what a target runs: its first kind with a role.
func software(kinds []string) (string, string) {
	for _, k := range kinds {
		if r := roleOf(k); r != "" && k != "hikari" && k != "jvm" {
			return k, r
		}
	}
	for _, k := range kinds {
		if r := roleOf(k); r != "" {
			return k, r
		}
	}
	return "", ""
}

func sameRole(softwares []string, role string) []string {
	var out []string
	for _, s := range softwares {
		if roleOf(s) == role {
			out = append(out, s)
		}
	}
	return out
}

func knownServers() string {
	var out []string
	for _, s := range signatures {
		if s.role != "" {
			out = append(out, s.kind)
		}
	}
	return strings.Join(out, ", ")
}

// preset reports whether the live runner has a preset of the kind's name.
func preset(kind string) bool {
	_, ok := live.Presets[kind]
	return ok
}

func host(instance string) string {
	h, _, err := net.SplitHostPort(instance)
	if err != nil {
		return instance
	}
	return h
}

// cpuPresets picks where the tier's CPU comes from: the testbed's cgroup
// exporter when it reports a cgroup of the tier's name, else node_exporter
// on the servers' own host when no other server shares that host (a host's
// CPU is a tier's only then).
func cpuPresets(t *Tier, sources []source) []string {
	for _, s := range sources {
		if s.kind == "cgroup" && string(s.labels["tier"]) == t.Name {
			return []string{"cgroup"}
		}
	}
	nodes := map[string]string{} // host -> node_exporter instance
	for _, s := range sources {
		if s.kind == "node" {
			nodes[host(s.instance)] = s.instance
		}
	}
	var found []string
	for _, srv := range t.Servers {
		n, ok := nodes[host(srv["instance"])]
		if !ok {
			found = nil
			break
		}
		found = append(found, n)
	}
	if found == nil {
		return nil
	}
	for i, srv := range t.Servers {
		srv["node"] = found[i]
	}
	t.Notes = append(t.Notes, "CPU from node_exporter on each server's host: true only if nothing else runs there (check that no other tier shares the host)")
	return []string{"node"}
}

// shareNoHost takes the node preset from tiers whose servers share a host
// (one node_exporter) with another tier's: that host's CPU is neither's own,
// and the runner refuses two tiers reading one query, as it could not tell
// which of them saturates it. Each such tier gets a note naming the host
// and the tiers; it is then a tier with no CPU source, for the user to decide.
func shareNoHost(tiers []Tier) {
	onNode := map[string][]string{} // node_exporter instance -> tiers reading it
	for _, t := range tiers {
		if !slices.Contains(t.Presets, "node") {
			continue
		}
		seen := map[string]bool{}
		for _, srv := range t.Servers {
			if n := srv["node"]; n != "" && !seen[n] {
				seen[n] = true
				onNode[n] = append(onNode[n], t.Name)
			}
		}
	}
	for i := range tiers {
		t := &tiers[i]
		var shared []string
		for _, srv := range t.Servers {
			if n := srv["node"]; len(onNode[n]) > 1 && !slices.Contains(shared, n) {
				shared = append(shared, n)
			}
		}
		if len(shared) == 0 {
			continue
		}
		t.Presets = slices.DeleteFunc(t.Presets, func(p string) bool { return p == "node" })
		for _, srv := range t.Servers {
			delete(srv, "node")
		}
		t.Notes = slices.DeleteFunc(t.Notes, func(n string) bool { return strings.HasPrefix(n, "CPU from node_exporter") })
		for _, n := range shared {
			names := slices.Sorted(slices.Values(onNode[n]))
			t.Notes = append(t.Notes, fmt.Sprintf("node_exporter %s is on the host of tiers %s: a host's CPU shared by tiers is none's own, so it is not this tier's CPU",
				n, strings.Join(names, " and ")))
		}
	}
}

func hasCPU(t Tier) bool {
	if t.Queries["cpu"] != "" {
		return true
	}
	for _, p := range t.Presets {
		if live.Presets[p].CPU != "" {
			return true
		}
	}
	return false
}

// poolQueries read a pool's size now, per server, by the tier's software.
var poolQueries = map[string]map[string]string{
	"apache": {"threads": `sum(apache_workers{instance="%s"})`},
	"tomcat": {"threads": `sum(tomcat_threads_config_max_threads{instance="%s"})`},
	"hikari": {"connections": `sum(hikaricp_connections_max{instance="%s"})`},
	"bboard": {"threads": `sum(bboard_pool_size{pool="threads",instance="%s"})`, "connections": `sum(bboard_pool_size{pool="connections",instance="%s"})`},
	// pm = static keeps max_children processes: the pool's size.
	"phpfpm": {"children": `sum(phpfpm_total_processes{instance="%s"})`},
	"mysql":  {"connections": `sum(mysql_global_variables_max_connections{instance="%s"})`},
}

// softwareOf names what the tier runs as the deployment file does, so that
// its snippets and validate's baselines are that software's.
func softwareOf(t *Tier, vector func(string) (model.Vector, error)) error {
	switch t.Software {
	case "apache", "nginx", "tomcat", "pgbouncer":
		t.Deploys = t.Software
	case "phpfpm":
		t.Deploys = "php-fpm"
	case "postgres":
		t.Deploys = "postgresql"
	case "mysql":
		vec, err := vector(fmt.Sprintf(`mysql_version_info{instance=%q}`, t.Servers[0]["instance"]))
		if err != nil {
			return fmt.Errorf("tier %s: %w", t.Name, err)
		}
		t.Deploys = "mysql"
		if len(vec) > 0 && strings.Contains(strings.ToLower(string(vec[0].Metric["version"])), "mariadb") {
			t.Deploys = "mariadb"
		}
	}
	return nil
}

func readPools(t *Tier, vector func(string) (model.Vector, error)) error {
	inst := t.Servers[0]["instance"]
	kinds := []string{t.Software}
	if slices.Contains(t.Presets, "hikari") {
		kinds = append(kinds, "hikari")
	}
	for _, k := range kinds {
		for pool, q := range poolQueries[k] {
			vec, err := vector(strings.ReplaceAll(q, "%s", inst))
			if err != nil {
				return fmt.Errorf("tier %s: pool %s: %w", t.Name, pool, err)
			}
			if len(vec) == 1 && vec[0].Value >= 1 {
				if t.Pools == nil {
					t.Pools = map[string]int{}
				}
				t.Pools[pool] = int(vec[0].Value)
			}
		}
	}
	return nil
}

// pgMaintenance names PostgreSQL's own databases: postgres, where Debian's
// postgres_exporter connects, and the templates.
var pgMaintenance = []string{"postgres", "template0", "template1"}

// pgDatabases sets each PostgreSQL server's {dbName}, the databases whose
// active backends the postgres preset counts: every database but
// PostgreSQL's own, so that the exporter's backends stay out. With none, the
// user decides, and the runner refuses the file until {dbName} is set.
func pgDatabases(p *Proposal, t *Tier, vector func(string) (model.Vector, error)) error {
	var named []string
	for _, srv := range t.Servers {
		vec, err := vector(fmt.Sprintf(`group by (datname) (pg_stat_activity_count{instance=%q})`, srv["instance"]))
		if err != nil {
			return fmt.Errorf("tier %s: %w", t.Name, err)
		}
		var dbs []string
		for _, s := range vec {
			if db := string(s.Metric["datname"]); db != "" && !slices.Contains(pgMaintenance, db) {
				dbs = append(dbs, db)
			}
		}
		if len(dbs) == 0 {
			p.Decide = append(p.Decide, fmt.Sprintf("tier %s: no application database on %s (postgres_exporter's pg_stat_activity_count names only %s): set dbName in its servers entry to the application's databases, a regular expression (softalloc presets postgres)",
				t.Name, srv["instance"], strings.Join(pgMaintenance, ", ")))
			continue
		}
		sort.Strings(dbs)
		srv["dbName"] = strings.Join(dbs, "|")
		if !slices.Contains(named, strings.Join(dbs, ", ")) {
			named = append(named, strings.Join(dbs, ", "))
		}
	}
	if len(named) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("busy backends are those of the databases %s (dbName): check that these are the application's", strings.Join(named, "; ")))
	}
	return nil
}

// dbLatency gives the db tier a throughput and response time: the database's
// exporter has none by default. An app that times its own queries (the
// testbed's bulletin board, Go or Java) gives the DB's residence as the app
// sees it; else performance_schema's statement digests or MariaDB's user
// statistics, where mysqld_exporter collects them.
func dbLatency(p *Proposal, vector func(string) (model.Vector, error)) error {
	appTimed, err := vector("count(bboard_db_query_duration_seconds_count)")
	if err != nil {
		return err
	}
	for i := range p.Tiers {
		t := &p.Tiers[i]
		if t.Role != "db" {
			continue
		}
		if len(appTimed) == 1 && appTimed[0].Value > 0 {
			t.Queries = map[string]string{
				"throughput":   "sum(rate(bboard_db_queries_total[{window}]))",
				"responseTime": "sum(rate(bboard_db_query_duration_seconds_sum[{window}])) / sum(rate(bboard_db_query_duration_seconds_count[{window}]))",
			}
			t.Notes = append(t.Notes, "throughput and response time from the app's view of each query (sent to last row), the DB's residence")
			continue
		}
		if t.Software == "mysql" {
			inst := t.Servers[0]["instance"]
			digests, err := vector(fmt.Sprintf(`count(mysql_perf_schema_events_statements_total{instance=%q})`, inst))
			if err != nil {
				return err
			}
			if len(digests) == 1 && digests[0].Value > 0 {
				t.Presets = append(t.Presets, "mysql-perfschema")
				t.Notes = append(t.Notes, "throughput and response time from performance_schema's statement digests (softalloc presets mysql-perfschema says what they leave out)")
				continue
			}
			users, err := vector(fmt.Sprintf(`group by (user) (mysql_info_schema_user_statistics_select_commands_total{instance=%q})`, inst))
			if err != nil {
				return err
			}
			var apps []string
			for _, u := range users {
				if name := string(u.Metric["user"]); name != "" && !monitoringUser.MatchString(name) {
					apps = append(apps, name)
				}
			}
			if len(apps) > 0 {
				sort.Strings(apps)
				t.Presets = append(t.Presets, "mysql-userstat")
				for _, srv := range t.Servers {
					srv["dbUser"] = strings.Join(apps, "|")
				}
				t.Notes = append(t.Notes, fmt.Sprintf("throughput and response time from MariaDB's user statistics of %s: check that these are the application's users", strings.Join(apps, ", ")))
				continue
			}
		}
		p.Decide = append(p.Decide, fmt.Sprintf("tier %s: no throughput and response time (%s's exporter reads no per-statement latency): turn on performance_schema with mysqld_exporter's --collect.perf_schema.eventsstatements, or MariaDB's userstat with --collect.info_schema.userstats (softalloc presets mysql-perfschema, mysql-userstat), or time the queries in the app", t.Name, t.Software))
	}
	return nil
}

// monitoringUser names the database users that watch rather than serve.
var monitoringUser = regexp.MustCompile(`(?i)exporter|monitor|prometheus|root|mysql\.|mariadb\.sys`)

// pgbouncerAdmin is PgBouncer's admin console, a pseudo-database whose pool
// is the exporter's own connection: the pgbouncer preset leaves it out.
const pgbouncerAdmin = "pgbouncer"

// pgbouncerPools reads a pooler tier's pool from its exporter: the
// server connections per (database, user) pool, SHOW DATABASES' pool_size
// (default_pool_size unless a database sets its own), and max_client_conn;
// and says what the user must decide of it.
func pgbouncerPools(p *Proposal, t *Tier, vector func(string) (model.Vector, error)) error {
	inst := t.Servers[0]["instance"]
	vec, err := vector(fmt.Sprintf(`pgbouncer_databases_database_pool_size{database!=%q,instance=%q}`, pgbouncerAdmin, inst))
	if err != nil {
		return fmt.Errorf("tier %s: %w", t.Name, err)
	}
	sizes := map[int][]string{} // pool_size -> databases
	for _, s := range vec {
		n := int(s.Value)
		sizes[n] = append(sizes[n], string(s.Metric["database"]))
	}
	var chosen []string // the databases of the pool proposed
	switch {
	case len(sizes) == 0:
		p.Decide = append(p.Decide, fmt.Sprintf("tier %s: PgBouncer at %s has no database but its admin console (SHOW DATABASES): the pgbouncer preset reads nothing until pgbouncer.ini's [databases] names the application's; set pools: {default_pool_size: N}", t.Name, inst))
	case len(sizes) == 1:
		for n := range sizes {
			setPool(t, "connections", n)
			chosen = sizes[n]
		}
	default:
		// default_pool_size is the size of the databases that set none:
		// the most common one is the likeliest.
		var keys []int
		for n := range sizes {
			keys = append(keys, n)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(keys)))
		var each []string
		common := keys[0]
		for _, n := range keys {
			sort.Strings(sizes[n])
			each = append(each, fmt.Sprintf("%d (%s)", n, strings.Join(sizes[n], ", ")))
			if len(sizes[n]) > len(sizes[common]) {
				common = n
			}
		}
		setPool(t, "connections", common)
		chosen = sizes[common]
		p.Decide = append(p.Decide, fmt.Sprintf("tier %s: PgBouncer at %s has databases of different pool sizes, %s: default_pool_size is only the pool of those that set no pool_size of their own; the file proposes %d, and a hook that sets default_pool_size leaves the others as they are",
			t.Name, inst, strings.Join(each, "; "), common))
	}
	clients, err := vector(fmt.Sprintf(`max(pgbouncer_config_max_client_conn{instance=%q})`, inst))
	if err != nil {
		return fmt.Errorf("tier %s: %w", t.Name, err)
	}
	if len(clients) == 1 && clients[0].Value >= 1 {
		t.MaxClientConn = int(clients[0].Value)
	}
	if err := pgbouncerReserve(p, t, chosen, vector); err != nil {
		return err
	}
	t.Notes = append(t.Notes,
		"default_pool_size is the server connections of each (database, user) pool, the connections pool the pgbouncer preset reads busy against; the database sees it, and reserve_pool_size when clients wait, times the pools. max_client_conn is a limit the connections in front must fit, not a pool softalloc sizes",
		fmt.Sprintf("a hook sets default_pool_size on the running PgBouncer: examples/hooks/pgbouncer.sh --host HOST --port PORT \"{%s.connections}\" (SET through its admin console; with --ini it outlasts a RELOAD)", t.Name))
	return nil
}

// pgbouncerReserve reads reserve_pool_size: SHOW DATABASES' reserve_pool
// (the exporter's database_reserve_pool_size) of the databases whose pool
// init proposes, the most common of them, the larger on a tie, since the
// database's budget counts it.
func pgbouncerReserve(p *Proposal, t *Tier, databases []string, vector func(string) (model.Vector, error)) error {
	if len(databases) == 0 {
		return nil
	}
	inst := t.Servers[0]["instance"]
	vec, err := vector(fmt.Sprintf(`pgbouncer_databases_database_reserve_pool_size{database!=%q,instance=%q}`, pgbouncerAdmin, inst))
	if err != nil {
		return fmt.Errorf("tier %s: %w", t.Name, err)
	}
	of := map[string]bool{}
	for _, db := range databases {
		of[db] = true
	}
	count := map[int]int{}
	for _, s := range vec {
		if of[string(s.Metric["database"])] {
			count[int(s.Value)]++
		}
	}
	if len(count) == 0 {
		p.Decide = append(p.Decide, fmt.Sprintf("tier %s: PgBouncer at %s exports no reserve pool (pgbouncer_databases_database_reserve_pool_size): if pgbouncer.ini sets reserve_pool_size, add it to the pools (reserve_pool_size: N), which the database's connection budget counts", t.Name, inst))
		return nil
	}
	best, n := -1, 0
	for v, c := range count {
		if c > n || c == n && v > best {
			best, n = v, c
		}
	}
	t.ReservePoolSize = best
	return nil
}

func setPool(t *Tier, pool string, n int) {
	if t.Pools == nil {
		t.Pools = map[string]int{}
	}
	t.Pools[pool] = n
}

// otherPgBouncerExporters names the targets that export pgbouncer_up but
// not the names the pgbouncer preset reads: another exporter (the
// prometheus-community Go one, Debian 12's 1.7, which fails every scrape
// of PgBouncer 1.8 or later), or 2.x failing to read its PgBouncer.
func otherPgBouncerExporters(p *Proposal, vector func(string) (model.Vector, error)) error {
	vec, err := vector(fmt.Sprintf(`max by (instance, job) (pgbouncer_up) unless on (instance) group by (instance) (%s)`, pgbouncerMetric))
	if err != nil {
		return err
	}
	sort.Slice(vec, func(i, j int) bool { return vec[i].Metric["instance"] < vec[j].Metric["instance"] })
	for _, s := range vec {
		inst, job := string(s.Metric["instance"]), string(s.Metric["job"])
		if s.Value == 0 {
			p.Decide = append(p.Decide, fmt.Sprintf("target %s (job %s) exports pgbouncer_up 0: its exporter cannot read PgBouncer's admin console (see its log); it is left out until it can, then run init again", inst, job))
			continue
		}
		p.Decide = append(p.Decide, fmt.Sprintf("target %s (job %s) exports pgbouncer_up but not %s: another PgBouncer exporter than the pgbouncer preset reads (prometheus-pgbouncer-exporter 2.x, examples/pgbouncer-exporter/install-pgbouncer-exporter.sh); it is left out", inst, job, pgbouncerMetric))
	}
	return nil
}

// behindPooler asks for the database's connection limit behind a pooler,
// which recommend checks the pooler's server connections against: the
// metrics give max_connections, not what others hold of it.
func behindPooler(p *Proposal, t *Tier, pooler string, vector func(string) (model.Vector, error)) error {
	limit := "max_connections"
	if t.Software == "postgres" {
		vec, err := vector(fmt.Sprintf(`max(pg_settings_max_connections{instance=%q})`, t.Servers[0]["instance"]))
		if err != nil {
			return fmt.Errorf("tier %s: %w", t.Name, err)
		}
		if len(vec) == 1 {
			limit = fmt.Sprintf("max_connections %d", int(vec[0].Value))
		}
	}
	p.Decide = append(p.Decide, fmt.Sprintf("tier %s: its clients are the server connections of tier %s (default_pool_size per database and user): give it a connectionLimit (%s; reserved: the exporter's and administrators' connections, superuser_reserved_connections) so that recommend checks them against it",
		t.Name, pooler, limit))
	return nil
}
