package hooks

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/softalloc/softalloc/internal/testserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poolsAdmin is the testbed Java app's /admin/pools contract
// (testbed/java/src/main/java/softalloc/bboard/Main.java, Pools): GET the
// sizes; POST ?threads=&connections= sets both and answers once HikariCP
// holds that many connections, 400 naming a bad value, 504 when the pool
// does not fill, with the new sizes already set as the app leaves them.
// On virtual threads (limit set) POST ?limit=&connections= sets the
// concurrency limit's permits (0: none) in place of the threads.
// The real app needs a Maven build and a MariaDB: this stands in for it.
type poolsAdmin struct {
	mu                sync.Mutex
	virtual           bool
	limit             int
	threads, conns    int
	dbLimit           int // the most connections the database admits
	posts             int
	threadsAtEachPost []int
}

func (p *poolsAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.URL.Path != "/admin/pools" {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		p.posts++
		first := "threads"
		if p.virtual {
			first = "limit"
		}
		var n [2]int
		for i, key := range []string{first, "connections"} {
			v, err := strconv.Atoi(r.URL.Query().Get(key))
			if err != nil || v < 1 && (key != "limit" || v < 0) {
				http.Error(w, fmt.Sprintf("%s=%q: want a positive integer", key, r.URL.Query().Get(key)), http.StatusBadRequest)
				return
			}
			n[i] = v
		}
		if p.virtual {
			p.limit, p.conns = n[0], n[1]
		} else {
			p.threads, p.conns = n[0], n[1]
		}
		p.threadsAtEachPost = append(p.threadsAtEachPost, p.threads)
		if p.conns > p.dbLimit {
			http.Error(w, fmt.Sprintf("HikariCP did not reach %d idle connections within 20s (it holds %d, %d idle)", p.conns, p.dbLimit, p.dbLimit), http.StatusGatewayTimeout)
			return
		}
	default:
		http.Error(w, "want GET or POST", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	total := min(p.conns, p.dbLimit)
	_, _ = fmt.Fprintf(w, "{\"virtualThreads\":%t,\"limit\":%d,\"threads\":%d,\"acceptCount\":100,\"connections\":%d,\"totalConnections\":%d,\"idleConnections\":%d}\n",
		p.virtual, p.limit, p.threads, p.conns, total, total)
}

// history is the posts so far and the threads each set, read under the
// lock the handler writes them under.
func (p *poolsAdmin) history() (int, []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posts, append([]int(nil), p.threadsAtEachPost...)
}

func (p *poolsAdmin) sizes() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.threads, p.conns
}

func (p *poolsAdmin) limitSize() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limit, p.conns
}

// The Tomcat/HikariCP hook posts the sizes to the admin endpoint, checks
// the answer, and posts the old sizes back when the app could not fill the
// pool. Tested against a Go server implementing the Java app's contract.
func TestTomcatHikariHook(t *testing.T) {
	t.Parallel()
	testserver.Binary(t, "curl", "curl")
	app := &poolsAdmin{threads: 200, conns: 10, dbLimit: 50}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	env := []string{"TOMCAT_ADMIN=" + srv.URL}

	r := runHook(t, env, "tomcat-hikari.sh", "40", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "tomcat-hikari: Tomcat maxThreads 200 -> 40 (read back)\n"+
		"tomcat-hikari: HikariCP maximumPoolSize 10 -> 20 (read back, 20 connections open)\n", r.stdout)
	threads, conns := app.sizes()
	assert.Equal(t, []int{40, 20}, []int{threads, conns})

	r = runHook(t, env, "tomcat-hikari.sh", "40", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "maxThreads 40 (unchanged)")
	posts, _ := app.history()
	assert.Equal(t, 1, posts, "nothing posted when nothing changes")

	// The database admits 50: the app sets 60 and times out filling the
	// pool; the hook puts 40 and 20 back.
	r = runHook(t, env, "tomcat-hikari.sh", "80", "60")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "refuses 80 threads, 60 connections (HTTP 504: HikariCP did not reach 60 idle connections")
	assert.Contains(t, r.stderr, "kept at 40 threads, 20 connections")
	assert.Empty(t, r.stdout)
	threads, conns = app.sizes()
	assert.Equal(t, []int{40, 20}, []int{threads, conns})
	_, threadsAtEachPost := app.history()
	assert.Equal(t, []int{40, 80, 40}, threadsAtEachPost)

	r = runHook(t, env, "tomcat-hikari.sh", "40", "x")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "connections 'x': want a positive integer")

	r = runHook(t, []string{"TOMCAT_ADMIN=" + srv.URL + "/nowhere"}, "tomcat-hikari.sh", "40", "20")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "HTTP 404")
}

// With --limit (the Java app on virtual threads) the first size is the
// concurrency limit's permits, 0 for none, posted as limit= and read back
// from the answer's limit; Tomcat's maxThreads is not touched.
func TestTomcatHikariHookLimit(t *testing.T) {
	t.Parallel()
	testserver.Binary(t, "curl", "curl")
	app := &poolsAdmin{virtual: true, limit: 0, threads: 200, conns: 10, dbLimit: 50}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	env := []string{"TOMCAT_ADMIN=" + srv.URL}

	r := runHook(t, env, "tomcat-hikari.sh", "--limit", "30", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "tomcat-hikari: concurrency limit 0 -> 30 permits (read back)\n"+
		"tomcat-hikari: HikariCP maximumPoolSize 10 -> 20 (read back, 20 connections open)\n", r.stdout)
	permits, conns := app.limitSize()
	assert.Equal(t, []int{30, 20}, []int{permits, conns})
	threads, _ := app.sizes()
	assert.Equal(t, 200, threads, "Tomcat's maxThreads untouched")

	r = runHook(t, append(env, "TOMCAT_LIMIT=1"), "tomcat-hikari.sh", "0", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "tomcat-hikari: concurrency limit 30 -> 0 permits (read back)\n"+
		"tomcat-hikari: HikariCP maximumPoolSize 20 (unchanged)\n", r.stdout)
	permits, _ = app.limitSize()
	assert.Zero(t, permits, "0: no limit")

	r = runHook(t, env, "tomcat-hikari.sh", "--limit", "0", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "concurrency limit 0 (unchanged)")

	// The pool cannot fill: both sizes go back.
	r = runHook(t, env, "tomcat-hikari.sh", "--limit", "40", "60")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "refuses 40 permits, 60 connections (HTTP 504")
	assert.Contains(t, r.stderr, "kept at 0 permits, 20 connections")
	permits, conns = app.limitSize()
	assert.Equal(t, []int{0, 20}, []int{permits, conns})

	for _, bad := range []string{"-1", "x", "1.5", "07", ""} {
		r = runHook(t, env, "tomcat-hikari.sh", "--limit", bad, "20")
		assert.Equal(t, 2, r.code, bad)
		assert.Contains(t, r.stderr, "permits '"+bad+"': want an integer >= 0 (0: no limit)")
	}
	r = runHook(t, append(env, "TOMCAT_LIMIT=yes"), "tomcat-hikari.sh", "4", "20")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "TOMCAT_LIMIT 'yes': want 1 or nothing")
}
