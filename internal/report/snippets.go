package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// SnippetFormats are the config snippets recommend can print.
var SnippetFormats = []string{"apache", "tomcat", "hikari", "mysql"}

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
// hikari, mysql, or all.
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
			return nil, fmt.Errorf("--format %q: %q is not one of apache, tomcat, hikari, mysql, all", s, f)
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
			switch {
			case f == "apache" && t.Role == algorithms.RoleWeb:
				out = append(out, apacheSnippet(t, r))
			case f == "tomcat" && t.Role == algorithms.RoleApp:
				out = append(out, tomcatSnippet(d, t, r))
			case f == "hikari" && t.Role == algorithms.RoleApp && r.ConnectionsPerServer != nil:
				out = append(out, hikariSnippet(t, r))
			case f == "mysql" && t.Role == algorithms.RoleDB:
				out = append(out, mysqlSnippet(t, r, appConnections))
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

// WriteSnippets prints snippets one after another with a header each.
func WriteSnippets(w io.Writer, snippets []Snippet) error {
	for _, s := range snippets {
		if _, err := fmt.Fprintf(w, "\n=== %s: tier %s (%s) -> %s\n%s", s.Format, s.Tier, s.Servers, s.File, s.Text); err != nil {
			return err
		}
	}
	return nil
}
