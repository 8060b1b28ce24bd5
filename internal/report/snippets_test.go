package report_test

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
)

// recommendation1414 is a recommendation of the 1/4/1/4 shape.
func recommendation(t *testing.T, topo string, web, app int) (algorithms.Deployment, []algorithms.TierRecommendation) {
	t.Helper()
	d, err := topology.ParseTopology(topo)
	require.NoError(t, err)
	sz, err := algorithms.CalculateMinAllocation(d, "app", float64(app*d.Tiers[1].Replicas), []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 800, ResponseTime: 0.1}, {Tier: "app", Throughput: 800, ResponseTime: 0.03}})
	require.NoError(t, err)
	_, recs := algorithms.RecommendAllocation(d, sz, algorithms.Allocation{"web": {Threads: web}})
	return d, recs
}

func TestParseFormats(t *testing.T) {
	f, err := report.ParseFormats("all")
	require.NoError(t, err)
	// Every format: a format prints only for the tiers that run its software.
	assert.Equal(t, []string{"apache", "tomcat", "hikari", "mysql", "php-fpm", "pgbouncer", "postgresql"}, f)
	assert.Equal(t, report.SnippetFormats, f, "all is the same list wherever it is used")
	f, err = report.ParseFormats("tomcat, apache,tomcat")
	require.NoError(t, err)
	assert.Equal(t, []string{"tomcat", "apache"}, f)
	_, err = report.ParseFormats("nginx")
	assert.EqualError(t, err, `--format "nginx": "nginx" is not one of apache, tomcat, hikari, mysql, php-fpm, pgbouncer, postgresql or all`)
}

func snippet(t *testing.T, snippets []report.Snippet, format string) report.Snippet {
	t.Helper()
	for _, s := range snippets {
		if s.Format == format {
			return s
		}
	}
	t.Fatalf("no %s snippet", format)
	return report.Snippet{}
}

func TestTomcatSnippetIsValidXML(t *testing.T) {
	d, recs := recommendation(t, "1/4/1/4", 400, 8)
	s := snippet(t, report.Snippets(d, recs, []string{"tomcat"}), "tomcat")
	var doc struct {
		Connector struct {
			MaxThreads  int `xml:"maxThreads,attr"`
			AcceptCount int `xml:"acceptCount,attr"`
		}
		Resource struct {
			MaxTotal int `xml:"maxTotal,attr"`
			MaxIdle  int `xml:"maxIdle,attr"`
		}
	}
	require.NoError(t, xml.Unmarshal([]byte("<root>"+s.Text+"</root>"), &doc))
	assert.Equal(t, 8, doc.Connector.MaxThreads)
	assert.Equal(t, 100, doc.Connector.AcceptCount)
	assert.Equal(t, 8, doc.Resource.MaxTotal)
	assert.Equal(t, 8, doc.Resource.MaxIdle)
	assert.Contains(t, s.Servers, "app-1 .. app-4")
	assert.Contains(t, s.Text, `the connection pool to the "cluster" tier, 8 per server`)

	// An XML comment may not hold "--": a tier may be named so.
	d.Tiers[1].Name, recs[1].Name = "app--x-", "app--x-"
	s = snippet(t, report.Snippets(d, recs, []string{"tomcat"}), "tomcat")
	require.NoError(t, xml.Unmarshal([]byte("<root>"+s.Text+"</root>"), &doc), s.Text)
	assert.Equal(t, 8, doc.Connector.MaxThreads)
}

// MaxRequestWorkers is the pool itself where a ThreadsPerChild near
// Apache's 25 divides it, and rounds up only where none does.
func TestApacheSnippetKeepsThePool(t *testing.T) {
	for _, c := range []struct{ threads, perChild, workers int }{
		{400, 25, 400}, {120, 24, 120}, {90, 30, 90}, {97, 25, 100}} {
		d, recs := recommendation(t, "1/2/1/2", c.threads, 13)
		text := snippet(t, report.Snippets(d, recs, []string{"apache"}), "apache").Text
		assert.Contains(t, text, fmt.Sprintf("ThreadsPerChild        %d\n", c.perChild), "%d threads", c.threads)
		assert.Contains(t, text, fmt.Sprintf("MaxRequestWorkers      %d\n", c.workers), "%d threads", c.threads)
		assert.Contains(t, text, fmt.Sprintf("ServerLimit            %d\n", 2*c.workers/c.perChild), "room for a graceful restart")
	}
}

func properties(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "line %q is key=value", line)
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

func TestHikariSnippet(t *testing.T) {
	d, recs := recommendation(t, "1/2/1/2", 400, 13)
	p := properties(t, snippet(t, report.Snippets(d, recs, []string{"hikari"}), "hikari").Text)
	assert.Equal(t, "13", p["maximumPoolSize"])
	assert.Equal(t, "13", p["minimumIdle"])
	// Spring Boot's keys, commented: HikariConfig refuses a file that holds
	// a key it does not know.
	assert.NotContains(t, p, "spring.datasource.hikari.maximum-pool-size")
	assert.Contains(t, snippet(t, report.Snippets(d, recs, []string{"hikari"}), "hikari").Text, "# spring.datasource.hikari.maximum-pool-size=13\n")
}

func TestMySQLSnippet(t *testing.T) {
	d, recs := recommendation(t, "1/4/1/4", 400, 8)
	s := snippet(t, report.Snippets(d, recs, []string{"mysql"}), "mysql")
	lines := strings.Split(s.Text, "\n")
	section := ""
	values := map[string]string{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "["):
			require.True(t, strings.HasSuffix(l, "]"), l)
			section = strings.Trim(l, "[]")
		default:
			k, v, ok := strings.Cut(l, "=")
			require.True(t, ok, l)
			require.Equal(t, "mysqld", section)
			values[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	n, err := strconv.Atoi(values["max_connections"])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 32, "every app connection (4 x 8) fits")

	if tool, err := exec.LookPath("my_print_defaults"); err == nil {
		path := filepath.Join(t.TempDir(), "my.cnf")
		require.NoError(t, os.WriteFile(path, []byte(s.Text), 0o644))
		out, err := exec.Command(tool, "--defaults-file="+path, "mysqld").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "--max_connections="+values["max_connections"])
	} else {
		t.Log("my_print_defaults not installed: the option file was checked by the Go parser only")
	}
}

// The Apache snippet passes Apache's own syntax check, where apache2 is
// installed (.ci/run installs it; in CI its absence is a failure).
func TestApacheSnippetPassesApacheSyntaxCheck(t *testing.T) {
	for _, threads := range []int{400, 125, 120, 97, 10, 1} {
		d, recs := recommendation(t, "1/2/1/2", threads, 13)
		s := snippet(t, report.Snippets(d, recs, []string{"apache"}), "apache")
		assert.Contains(t, s.Text, "MaxRequestWorkers")
		bin, err := exec.LookPath("apache2")
		if err != nil {
			if p := "/usr/sbin/apache2"; fileExists(p) {
				bin, err = p, nil
			}
		}
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("apache2 is not installed in CI: .ci/run must install it")
			}
			t.Skip("apache2 is not installed: skipping its syntax check (apt-get install apache2)")
		}
		dir := t.TempDir()
		snip := filepath.Join(dir, "mpm.conf")
		require.NoError(t, os.WriteFile(snip, []byte(s.Text), 0o644))
		conf := filepath.Join(dir, "httpd.conf")
		require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
			"ServerRoot " + dir,
			"LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so",
			"Listen 127.0.0.1:18080",
			"PidFile " + filepath.Join(dir, "httpd.pid"),
			"ErrorLog " + filepath.Join(dir, "error.log"),
			"ServerName localhost",
			"Include " + snip,
			"",
		}, "\n")), 0o644))
		out, err := exec.Command(bin, "-t", "-f", conf).CombinedOutput()
		require.NoError(t, err, "apache2 -t: %s\n%s", out, s.Text)
		assert.Contains(t, string(out), "Syntax OK")
		// The check must be able to fail: a bad value is refused.
		require.NoError(t, os.WriteFile(snip, []byte(strings.ReplaceAll(s.Text, "    MaxRequestWorkers", "    MaxRequestWorkerz")), 0o644))
		_, err = exec.Command(bin, "-t", "-f", conf).CombinedOutput()
		assert.Error(t, err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
