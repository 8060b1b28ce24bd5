package report

import (
	"fmt"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// permitsConnectionTimeout is HikariCP's connectionTimeout for a tier on
// virtual threads, in ms. Behind a limit sized with the pool a page seldom
// waits for a connection; when it does the pool is the bottleneck, and a
// page that waits HikariCP's default 30 s has failed any SLA long before:
// fail it fast, as the limit's bounded wait does.
const permitsConnectionTimeout = 2000

// permitsSnippet is the concurrency limit of a tier on virtual threads,
// where the thread pool was: Tomcat's maxThreads (Spring Boot's
// server.tomcat.threads.max) bounds nothing there, and without a limit the
// JDBC pool's queue becomes the only one.
func permitsSnippet(t algorithms.Tier, r algorithms.TierRecommendation) Snippet {
	n := r.ThreadsPerServer
	var b strings.Builder
	fmt.Fprintf(&b, "# softalloc: app tier %q, for %s: a concurrency limit of %d permits per server,\n", t.Name, serverRange(t), n)
	fmt.Fprintf(&b, "# where the thread pool was: with a virtual thread per request, maxThreads bounds nothing.\n")
	fmt.Fprintf(&b, "# Virtual threads (Spring Boot 3.2+, application.properties):\n")
	fmt.Fprintf(&b, "spring.threads.virtual.enabled=true\n")
	fmt.Fprintf(&b, "# (plain Tomcat 11: <Connector ... useVirtualThreads=\"true\"/> in server.xml)\n")
	fmt.Fprintf(&b, "# The limit: no Spring Boot or Tomcat property bounds the requests a servlet app runs at once\n")
	fmt.Fprintf(&b, "# (server.tomcat.threads.max is ignored; Tomcat's SemaphoreValve cannot bound the wait): a filter\n")
	fmt.Fprintf(&b, "# with a fair java.util.concurrent.Semaphore of %d permits and a bounded wait, 503 after it,\n", n)
	fmt.Fprintf(&b, "# as testbed/java's Limit filter: -limit %d -limit-wait 2s\n", n)
	fmt.Fprintf(&b, "# or a key your filter reads: app.concurrency-limit.permits=%d\n", n)
	return Snippet{Format: "tomcat", Tier: t.Name, Servers: serverRange(t),
		File: "application.properties (the limit: your filter's setting)", Text: b.String()}
}

// permitsHikari adds the fail-fast connectionTimeout to a virtual-thread
// tier's HikariCP snippet.
func permitsHikari(s Snippet) Snippet {
	s.Text += fmt.Sprintf("# Virtual threads: a page that cannot get a connection fails after %d ms, not HikariCP's 30 s.\n", permitsConnectionTimeout)
	s.Text += fmt.Sprintf("connectionTimeout=%d\n# spring.datasource.hikari.connection-timeout=%d\n", permitsConnectionTimeout, permitsConnectionTimeout)
	return s
}
