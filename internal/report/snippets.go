package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// FormatPHPFPM is the php-fpm pool file's format.
const FormatPHPFPM = "php-fpm"

// SnippetFormats are the config snippets recommend can print, and what
// --format all gives: each prints only for the tiers that run its software
// (the php-fpm pool file for a php-fpm tier alone), so every stack can ask
// for all of them.
var SnippetFormats = []string{"apache", "tomcat", "hikari", "mysql", FormatPHPFPM, FormatPgBouncer, FormatPostgreSQL}

// SnippetOptions hold what a snippet can say beyond the pool sizes.
type SnippetOptions struct {
	// ChildRSS is a php-fpm child's mean resident memory in bytes, where
	// it is known (0: not): the pool file then says the memory its
	// children need.
	ChildRSS float64
}

// Snippet is one ready-to-paste configuration fragment.
type Snippet struct {
	Format string `json:"format"`
	Tier   string `json:"tier"`
	// Servers names the servers it is for ("app-1 .. app-4").
	Servers string `json:"servers"`
	// File is where it goes.
	File string `json:"file"`
	Text string `json:"text"`
}

// ParseFormats reads --format: a comma-separated list of apache, tomcat,
// hikari, mysql, php-fpm, or all. Each format is printed for the tiers that
// run its software (Tier.Software), or, where a tier does not say, by its
// role as before.
func ParseFormats(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		names := []string{f}
		if f == "all" {
			names = SnippetFormats
		} else if !contains(SnippetFormats, f) {
			return nil, fmt.Errorf("--format %q: %q is not one of %s or all", s, f, strings.Join(SnippetFormats, ", "))
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func serverRange(t algorithms.Tier) string {
	if t.Replicas == 1 {
		return t.ServerName(0)
	}
	return fmt.Sprintf("each of %s .. %s", t.ServerName(0), t.ServerName(t.Replicas-1))
}

// Snippets renders the recommended sizes for each requested format, for the
// tiers of the matching role.
func Snippets(d algorithms.Deployment, recs []algorithms.TierRecommendation, formats []string) []Snippet {
	return SnippetsWith(d, recs, formats, SnippetOptions{})
}

// runs says whether tier t runs what format f configures: its software,
// where it says (Tomcat's and HikariCP's settings mean nothing to php-fpm),
// else its role, as before tiers said what they run.
func runs(t algorithms.Tier, f string) bool {
	sw := t.Software
	switch f {
	case "apache":
		return t.Role == algorithms.RoleWeb && (sw == "" || sw == algorithms.SoftwareApache)
	case "tomcat":
		return t.Role == algorithms.RoleApp && !t.Children && (sw == "" || sw == algorithms.SoftwareTomcat)
	case "hikari":
		return t.Role == algorithms.RoleApp && !t.Children &&
			(sw == "" || sw == algorithms.SoftwareHikari || sw == algorithms.SoftwareTomcat)
	case "mysql":
		return t.Role == algorithms.RoleDB && (sw == "" || sw == algorithms.SoftwareMariaDB || sw == algorithms.SoftwareMySQL)
	case FormatPHPFPM:
		return sw == algorithms.SoftwarePHPFPM
	}
	return false
}

// SnippetsWith is Snippets with what the snippets can say beyond the sizes.
func SnippetsWith(d algorithms.Deployment, recs []algorithms.TierRecommendation, formats []string, opts SnippetOptions) []Snippet {
	byName := map[string]algorithms.TierRecommendation{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	appConnections := 0 // connections that can reach the DB tier, all app servers
	for _, t := range d.Tiers {
		if r, ok := byName[t.Name]; ok && t.Role == algorithms.RoleApp && r.TotalConnections != nil {
			appConnections += *r.TotalConnections
		}
	}
	var out []Snippet
	for _, f := range formats {
		for _, t := range d.Tiers {
			r, ok := byName[t.Name]
			if !ok {
				continue
			}
			if !runs(t, f) {
				continue
			}
			switch {
			case f == "apache":
				s := apacheSnippet(t, r)
				if i := d.TierIndex(t.Name); i+1 < len(d.Tiers) && d.Tiers[i+1].Children {
					if next, ok := byName[d.Tiers[i+1].Name]; ok {
						s.Text += proxyFCGI(d.Tiers[i+1], next)
					}
				}
				out = append(out, s)
			case f == "tomcat" && t.Permits:
				out = append(out, permitsSnippet(t, r))
			case f == "tomcat":
				out = append(out, tomcatSnippet(d, t, r))
			case f == "hikari" && r.ConnectionsPerServer != nil && t.Permits:
				out = append(out, permitsHikari(hikariSnippet(t, r)))
			case f == "hikari" && r.ConnectionsPerServer != nil:
				out = append(out, hikariSnippet(t, r))
			case f == "mysql" && r.MaxConnections != nil:
				out = append(out, childrenDBSnippet(t, r))
			case f == "mysql":
				out = append(out, mysqlSnippet(t, r, appConnections))
			case f == FormatPHPFPM:
				out = append(out, phpFPMSnippet(t, r, opts))
			}
		}
	}
	return out
}

// apacheSnippet sizes mpm_event and mpm_worker: MaxRequestWorkers is the
// thread pool; it must be a multiple of ThreadsPerChild, and ServerLimit
// processes of ThreadsPerChild threads must hold it.
func apacheSnippet(t algorithms.Tier, r algorithms.TierRecommendation) Snippet {
	threads := r.ThreadsPerServer
	perChild := threadsPerChild(threads)
	workers := perChild * int(math.Ceil(float64(threads)/float64(perChild)))
	limit := workers / perChild
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: web tier %q, for %s: thread pool %d per server.\n", t.Name, serverRange(t), threads)
	if workers != threads {
		fmt.Fprintf(&b, "# MaxRequestWorkers is rounded up to a multiple of ThreadsPerChild (%d).\n", perChild)
	}
	// mpm_event keeps the processes of a graceful restart serving their
	// open connections beside the new ones: ServerLimit leaves them room.
	fmt.Fprintf(&b, "# ServerLimit leaves room for processes that finish their connections after a graceful\n")
	fmt.Fprintf(&b, "# restart; a change to ServerLimit or ThreadLimit takes a full restart.\n")
	for _, mpm := range []string{"mpm_event_module", "mpm_worker_module"} {
		fmt.Fprintf(&b, "<IfModule %s>\n", mpm)
		fmt.Fprintf(&b, "    ServerLimit            %d\n", 2*limit)
		fmt.Fprintf(&b, "    ThreadLimit            %d\n", max(perChild, 64))
		fmt.Fprintf(&b, "    ThreadsPerChild        %d\n", perChild)
		fmt.Fprintf(&b, "    MaxRequestWorkers      %d\n", workers)
		fmt.Fprintf(&b, "    StartServers           %d\n", min(limit, 2))
		fmt.Fprintf(&b, "    MinSpareThreads        %d\n", perChild)
		fmt.Fprintf(&b, "    MaxSpareThreads        %d\n", max(workers, 2*perChild))
		fmt.Fprintf(&b, "</IfModule>\n")
	}
	return Snippet{Format: "apache", Tier: t.Name, Servers: serverRange(t), File: "mpm_event.conf (or httpd.conf)", Text: b.String()}
}

// threadsPerChild is Apache's threads per process for a pool of n: n itself
// up to 25 (Apache's default), else a divisor of n from 16 to 64 (the
// default ThreadLimit) nearest 25, so that MaxRequestWorkers is n exactly;
// else 25, and MaxRequestWorkers rounds up (60 once became 75 where 20 x 3
// holds it exactly).
func threadsPerChild(n int) int {
	if n <= 25 {
		return max(n, 1)
	}
	best := 0
	for d := 16; d <= 64; d++ {
		if n%d == 0 && (best == 0 || abs(d-25) < abs(best-25)) {
			best = d
		}
	}
	if best == 0 {
		return 25
	}
	return best
}

func abs(x int) int { return max(x, -x) }

// xmlComment makes s safe inside an XML comment, which may not hold "--"
// or end in "-" (a tier named app--x broke the Tomcat snippet's XML).
func xmlComment(s string) string {
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "- -")
	}
	if strings.HasSuffix(s, "-") {
		s += " "
	}
	return s
}

// tomcatSnippet sizes the HTTP connector's thread pool and the container's
// DB pool (DBCP2, Tomcat's default: maxTotal/maxIdle).
func tomcatSnippet(d algorithms.Deployment, t algorithms.Tier, r algorithms.TierRecommendation) Snippet {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- %s -->\n", xmlComment(fmt.Sprintf("softalloc: app tier %q, for %s: %d threads per server.", t.Name, serverRange(t), r.ThreadsPerServer)))
	fmt.Fprintf(&b, "<!-- server.xml: the connector's thread pool; acceptCount is its accept queue. -->\n")
	fmt.Fprintf(&b, "<Connector port=\"8080\" protocol=\"HTTP/1.1\"\n           maxThreads=\"%d\" minSpareThreads=\"%d\"\n           acceptCount=\"100\" connectionTimeout=\"20000\" />\n",
		r.ThreadsPerServer, min(r.ThreadsPerServer, 10))
	if r.ConnectionsPerServer != nil {
		c := *r.ConnectionsPerServer
		behind := "database"
		if i := d.TierIndex(t.Name); i >= 0 && i+1 < len(d.Tiers) {
			behind = fmt.Sprintf("%q tier", d.Tiers[i+1].Name)
		}
		fmt.Fprintf(&b, "<!-- %s -->\n", xmlComment(fmt.Sprintf("context.xml: the connection pool to the %s, %d per server; set driverClassName and url to it.", behind, c)))
		fmt.Fprintf(&b, "<Resource name=\"jdbc/app\" auth=\"Container\" type=\"javax.sql.DataSource\"\n          maxTotal=\"%d\" maxIdle=\"%d\" minIdle=\"%d\" initialSize=\"%d\" maxWaitMillis=\"10000\"\n          driverClassName=\"com.mysql.cj.jdbc.Driver\" url=\"jdbc:mysql://DB-HOST:3306/DB-NAME\"\n          username=\"app\" password=\"CHANGE-ME\" />\n",
			c, c, c, c)
	}
	return Snippet{Format: "tomcat", Tier: t.Name, Servers: serverRange(t), File: "conf/server.xml and conf/context.xml", Text: b.String()}
}

// hikariSnippet: a fixed-size pool (minimumIdle = maximumPoolSize), as
// HikariCP recommends. Spring Boot's keys are commented out: HikariConfig
// refuses a properties file that holds them ("Property
// spring.datasource.hikari.maximum-pool-size does not exist").
func hikariSnippet(t algorithms.Tier, r algorithms.TierRecommendation) Snippet {
	c := *r.ConnectionsPerServer
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: app tier %q, for %s: DB connection pool %d per server.\n", t.Name, serverRange(t), c)
	fmt.Fprintf(&b, "maximumPoolSize=%d\nminimumIdle=%d\n", c, c)
	fmt.Fprintf(&b, "# In Spring Boot's application.properties instead:\n# spring.datasource.hikari.maximum-pool-size=%d\n# spring.datasource.hikari.minimum-idle=%d\n", c, c)
	return Snippet{Format: "hikari", Tier: t.Name, Servers: serverRange(t), File: "hikari.properties (Spring Boot: application.properties, the commented keys)", Text: b.String()}
}

// mysqlSnippet: every app connection can end on one DB server (a clustering
// middleware may route any query anywhere), so max_connections must cover
// them all, with 25% headroom and slots for administration and monitoring.
func mysqlSnippet(t algorithms.Tier, r algorithms.TierRecommendation, appConnections int) Snippet {
	need := max(appConnections, r.ThreadsPerServer)
	maxConn := int(math.Ceil(float64(need)*1.25)) + 10
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: db tier %q, for %s: about %d busy threads per server;\n", t.Name, serverRange(t), r.ThreadsPerServer)
	fmt.Fprintf(&b, "# up to %d app connections can reach one server: +25%% headroom, +10 for admin and monitoring.\n", need)
	fmt.Fprintf(&b, "[mysqld]\nmax_connections = %d\nthread_cache_size = %d\n", maxConn, min(need, 100))
	return Snippet{Format: "mysql", Tier: t.Name, Servers: serverRange(t), File: "my.cnf (MySQL) or mariadb.conf.d/50-server.cnf (MariaDB)", Text: b.String()}
}

// phpFPMSnippet is the pool file's sizing: pm = static, so that every
// child runs from the start (dynamic's spawning lags a burst and each new
// child starts with cold caches), and the memory the children need.
func phpFPMSnippet(t algorithms.Tier, r algorithms.TierRecommendation, opts SnippetOptions) Snippet {
	n := r.ThreadsPerServer
	var b strings.Builder
	fmt.Fprintf(&b, "; softalloc: php-fpm tier %q, for %s: %d php-fpm children per server.\n", t.Name, serverRange(t), n)
	fmt.Fprintf(&b, "; Each child opens its own connections to the database: its max_connections follows from them.\n")
	if opts.ChildRSS > 0 {
		mib := opts.ChildRSS / (1 << 20)
		fmt.Fprintf(&b, "; Memory: %d children x %.0f MiB = %.0f MiB, beside the master process and OPcache's shared memory.\n", n, mib, float64(n)*mib)
	} else {
		fmt.Fprintf(&b, "; Memory: %d x a child's RSS (ps -o rss= -C php-fpm8.2), beside the master and OPcache's shared memory,\n", n)
		fmt.Fprintf(&b, "; must fit the server's memory.\n")
	}
	fmt.Fprintf(&b, "; Set in the pool's section; a reload (SIGUSR2) applies it and empties OPcache.\n")
	fmt.Fprintf(&b, "[www]\npm = static\npm.max_children = %d\n", n)
	return Snippet{Format: FormatPHPFPM, Tier: t.Name, Servers: serverRange(t), File: "/etc/php/8.2/fpm/pool.d/www.conf (the pool's file)", Text: b.String()}
}

// proxyFCGI bounds Apache's connections to each php-fpm server by its
// children: a request beyond them would only wait in php-fpm's listen
// queue, where Apache's timeouts do not see it.
func proxyFCGI(php algorithms.Tier, r algorithms.TierRecommendation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# proxy_fcgi (mod_proxy, mod_proxy_fcgi) to php-fpm tier %q: at most its %d children per server;\n", php.Name, r.ThreadsPerServer)
	fmt.Fprintf(&b, "# with several php-fpm servers, a BalancerMember each with this max=. Set the host and document root.\n")
	fmt.Fprintf(&b, "ProxyPassMatch \"^/(.*\\.php(/.*)?)$\" \"fcgi://PHP-HOST:9000/var/www/html/$1\" max=%d\n", r.ThreadsPerServer)
	return b.String()
}

// childrenDBSnippet is max_connections behind a children tier: the
// children's own connections, measured or the stated default, and the
// reserve (children + 4 failed pages with "Too many connections" and
// locked out the exporter in issue 36).
func childrenDBSnippet(t algorithms.Tier, r algorithms.TierRecommendation) Snippet {
	m := *r.MaxConnections
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: db tier %q, for %s: max_connections %s.\n", t.Name, serverRange(t), m)
	if !m.Measured {
		fmt.Fprintf(&b, "# Measure the connections per child: a %q pool query on this tier, e.g. busy:\n", algorithms.PoolConnections)
		fmt.Fprintf(&b, "# mysql_global_status_threads_connected{instance=\"{instance}\"} (mysqld_exporter).\n")
	}
	fmt.Fprintf(&b, "[mysqld]\nmax_connections = %d\nthread_cache_size = %d\n", m.PerServer, min(m.PerServer, 100))
	file := "my.cnf (MySQL) or mariadb.conf.d/50-server.cnf (MariaDB)"
	switch t.Software {
	case algorithms.SoftwareMariaDB:
		file = "/etc/mysql/mariadb.conf.d/50-server.cnf"
	case algorithms.SoftwareMySQL:
		file = "my.cnf"
	}
	return Snippet{Format: "mysql", Tier: t.Name, Servers: serverRange(t), File: file, Text: b.String()}
}

// WriteSnippets prints snippets one after another with a header each.
func WriteSnippets(w io.Writer, snippets []Snippet) error {
	for _, s := range snippets {
		if _, err := fmt.Fprintf(w, "\n=== %s: tier %s (%s) -> %s\n%s", s.Format, s.Tier, s.Servers, s.File, s.Text); err != nil {
			return err
		}
	}
	return nil
}
