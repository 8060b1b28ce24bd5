package report_test

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
)

// phpRecommendation is a recommendation for testdata's PHP stack (Apache ->
// php-fpm children -> MariaDB), with perChild connections measured (0: not).
func phpRecommendation(t *testing.T, children int, perChild float64) (algorithms.Deployment, []algorithms.TierRecommendation) {
	t.Helper()
	df, err := topology.LoadDeployment("../../testdata/deployments/php.yaml")
	require.NoError(t, err)
	d := df.Deployment
	sz, err := algorithms.CalculateMinAllocation(d, "php", float64(children), []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 30, ResponseTime: 0.3}, {Tier: "php", Throughput: 30, ResponseTime: 0.25, ConnectionsPerChild: perChild},
		{Tier: "db", Throughput: 600, ResponseTime: 0.001}})
	require.NoError(t, err)
	_, recs := algorithms.RecommendAllocation(d, sz, algorithms.Allocation{"web": {Threads: 150}})
	return d, recs
}

// binary finds a Debian program; absent, the test skips, or fails in CI.
func binary(t *testing.T, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed in CI: scripts/test-deps.sh must install %s", name, pkg)
	}
	t.Skipf("%s is not installed: skipping its check (apt-get install %s)", name, pkg)
	return ""
}

// Issue 40, item 8: --format printed Tomcat and HikariCP snippets for the
// PHP tier and a max_connections of 10-12 for 150-200 children. The
// snippets follow what each tier runs.
func TestPHPStackSnippets(t *testing.T) {
	d, recs := phpRecommendation(t, 40, 40.7/27.2)
	all, err := report.ParseFormats("all")
	require.NoError(t, err)
	snippets := report.Snippets(d, recs, all)
	var formats []string
	for _, s := range snippets {
		formats = append(formats, s.Format+":"+s.Tier)
	}
	assert.ElementsMatch(t, []string{"apache:web", "mysql:db", "php-fpm:php"}, formats)

	fpm := snippet(t, snippets, "php-fpm")
	assert.Contains(t, fpm.Text, "pm = static\n")
	assert.Contains(t, fpm.Text, "pm.max_children = 40\n")
	assert.Contains(t, fpm.Text, "40 php-fpm children")

	apache := snippet(t, snippets, "apache")
	assert.Contains(t, apache.Text, "MaxRequestWorkers      150\n")
	assert.Regexp(t, `(?m)^ProxyPassMatch .* max=40$`, apache.Text, "no more connections to php-fpm than its children")

	db := snippet(t, snippets, "mysql")
	want := int(math.Ceil(40*40.7/27.2)) + algorithms.ConnectionReserve
	assert.Contains(t, db.Text, "max_connections = "+strconv.Itoa(want)+"\n")
	assert.Contains(t, db.Text, "measured")
	assert.Contains(t, db.File, "mariadb.conf.d")

	// Asked for by name, Tomcat's and HikariCP's mean nothing here.
	assert.Empty(t, report.Snippets(d, recs, []string{"tomcat", "hikari"}))
	only, err := report.ParseFormats("php-fpm")
	require.NoError(t, err)
	assert.Len(t, report.Snippets(d, recs, only), 1)

	// Not measured: the default, said so.
	d, recs = phpRecommendation(t, 40, 0)
	db = snippet(t, report.Snippets(d, recs, []string{"mysql"}), "mysql")
	assert.Contains(t, db.Text, "max_connections = "+strconv.Itoa(int(math.Ceil(40*algorithms.DefaultConnectionsPerChild))+algorithms.ConnectionReserve)+"\n")
	assert.Contains(t, db.Text, "not measured")

	// A child's RSS known, the pool file says the memory the answer needs.
	fpm = snippet(t, report.SnippetsWith(d, recs, all, report.SnippetOptions{ChildRSS: 50 << 20}), "php-fpm")
	assert.Contains(t, fpm.Text, "40 children x 50 MiB = 2000 MiB")
}

// Each PHP-stack snippet passes the real program's check.
func TestPHPSnippetsPassTheirProgramsChecks(t *testing.T) {
	for _, children := range []int{1, 7, 40, 200} {
		d, recs := phpRecommendation(t, children, 1.5)
		all, err := report.ParseFormats("all")
		require.NoError(t, err)
		snippets := report.SnippetsWith(d, recs, all, report.SnippetOptions{ChildRSS: 40 << 20})
		t.Run("php-fpm "+strconv.Itoa(children), func(t *testing.T) {
			bin := binary(t, "php-fpm8.2", "php8.2-fpm")
			dir := t.TempDir()
			text := snippet(t, snippets, "php-fpm").Text
			// What a pool file has beside the snippet's lines, and a global section.
			conf := filepath.Join(dir, "fpm.conf")
			write := func(pool string) {
				require.NoError(t, os.WriteFile(conf, []byte("[global]\npid = "+filepath.Join(dir, "fpm.pid")+"\nerror_log = "+
					filepath.Join(dir, "fpm.log")+"\n"+pool+"user = nobody\nlisten = "+filepath.Join(dir, "fpm.sock")+"\n"), 0o644))
			}
			write(text)
			out, err := exec.Command(bin, "-t", "-y", conf).CombinedOutput()
			require.NoError(t, err, "php-fpm -t: %s\n%s", out, text)
			assert.Contains(t, string(out), "test is successful")
			// The check can fail: a bad value is refused.
			write(strings.Replace(text, "pm.max_children = ", "pm.max_children = -", 1))
			_, err = exec.Command(bin, "-t", "-y", conf).CombinedOutput()
			assert.Error(t, err)
		})
		t.Run("apache "+strconv.Itoa(children), func(t *testing.T) {
			bin := binary(t, "apache2", "apache2")
			dir := t.TempDir()
			text := snippet(t, snippets, "apache").Text
			snip := filepath.Join(dir, "php.conf")
			require.NoError(t, os.WriteFile(snip, []byte(text), 0o644))
			conf := filepath.Join(dir, "httpd.conf")
			require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
				"ServerRoot " + dir,
				"LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so",
				"LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so",
				"LoadModule proxy_fcgi_module /usr/lib/apache2/modules/mod_proxy_fcgi.so",
				"Listen 127.0.0.1:1", // apache2 -t binds nothing
				"PidFile " + filepath.Join(dir, "httpd.pid"),
				"ErrorLog " + filepath.Join(dir, "error.log"),
				"ServerName localhost",
				"Include " + snip,
				"",
			}, "\n")), 0o644))
			out, err := exec.Command(bin, "-t", "-f", conf).CombinedOutput()
			require.NoError(t, err, "apache2 -t: %s\n%s", out, text)
			assert.Contains(t, string(out), "Syntax OK")
			require.NoError(t, os.WriteFile(snip, []byte(strings.Replace(text, `" max=`, `" maxx=`, 1)), 0o644))
			_, err = exec.Command(bin, "-t", "-f", conf).CombinedOutput()
			assert.Error(t, err, "a ProxyPass parameter Apache does not know is refused")
		})
		t.Run("mariadb "+strconv.Itoa(children), func(t *testing.T) {
			bin := binary(t, "mariadbd", "mariadb-server")
			dir := t.TempDir()
			s := snippet(t, snippets, "mysql")
			m := regexp.MustCompile(`(?m)^max_connections = (\d+)$`).FindStringSubmatch(s.Text)
			require.NotNil(t, m, s.Text)
			cnf := filepath.Join(dir, "my.cnf")
			require.NoError(t, os.WriteFile(cnf, []byte(s.Text+"datadir = "+dir+"\n"), 0o644))
			out, err := exec.Command(bin, "--defaults-file="+cnf, "--help", "--verbose").CombinedOutput()
			require.NoError(t, err, "mariadbd --help --verbose: %s\n%s", lastLines(string(out)), s.Text)
			assert.Regexp(t, `(?m)^max-connections\s+`+m[1]+`$`, string(out))
			require.NoError(t, os.WriteFile(cnf, []byte(strings.Replace(s.Text, "\nmax_connections =", "\nmax_connectionz =", 1)), 0o644))
			_, err = exec.Command(bin, "--defaults-file="+cnf, "--help", "--verbose").CombinedOutput()
			assert.Error(t, err, "an unknown variable is refused")
		})
	}
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}
