package cli_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPushgateway runs Debian's prometheus-pushgateway on loopback.
func startPushgateway(t *testing.T) string { return startPushgatewayWith(t, "http") }

// startPushgatewayWith runs it with extra flags (a web config for TLS and
// basic auth), answering on scheme.
func startPushgatewayWith(t *testing.T, scheme string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-pushgateway")
	if err != nil {
		if bin, err = exec.LookPath("pushgateway"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("prometheus-pushgateway is not installed in CI: .ci/run must install it")
			}
			t.Skip("SKIPPED: prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway); the Pushgateway end-to-end test did not run")
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--web.listen-address=" + addr}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := scheme + "://" + addr
	// Readiness only: the test's own client, which checks nothing of TLS.
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := probe.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return url
			}
		}
		require.True(t, time.Now().Before(deadline), "the Pushgateway did not become ready: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 that is its own CA.
func selfSignedCert(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, certFile, keyFile
}

// A campaign's metrics pushed to a real Pushgateway are scraped back from it.
func TestPushgatewayEndToEnd(t *testing.T) {
	url := startPushgateway(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "capacity.prom")
	out, stderr, code := run(t, "", "recommend", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"),
		"--output", "json", "--pushgateway", url, "--job", "softalloc-ci", "--grouping", "branch=main", "--metrics-file", file)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Tiers []struct {
			Name             string
			ThreadsPerServer int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))

	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	pool := families["softalloc_recommended_pool_size"]
	require.NotNil(t, pool, "the pushed metrics are on the gateway")
	got := map[string]float64{}
	for _, m := range pool.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		assert.Equal(t, "softalloc-ci", l["job"])
		assert.Equal(t, "main", l["branch"])
		assert.Equal(t, "1/2/1/2", l["topology"])
		if l["pool"] == "threads" {
			got[l["tier"]] = m.GetGauge().GetValue()
		}
	}
	for _, tr := range doc.Tiers {
		assert.Equal(t, float64(tr.ThreadsPerServer), got[tr.Name], tr.Name)
	}
	for _, name := range []string{"softalloc_critical_resource_info", "softalloc_experiments", "softalloc_campaign_duration_seconds", "softalloc_saturation_workload_users"} {
		assert.Contains(t, families, name)
	}
	_, err = os.Stat(file)
	assert.NoError(t, err, "the metrics file is written too")
}

// A failed push is a clear error and a non-zero exit; the file is still written.
func TestFailedPushKeepsTheMetricsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "capacity.prom")
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	out, stderr, code := run(t, "", "find-critical", "--topology", "1/4/1/4", "--ramp-up", "10s", "--runtime", "20s", "--journal", filepath.Join(dir, "j"),
		"--pushgateway", dead, "--metrics-file", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "critical resource:", "the answer is printed before the push")
	assert.Contains(t, stderr, "push to "+dead)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "softalloc_critical_resource_info")

	_, stderr, code = run(t, "", "find-critical", "--topology", "1/4/1/4", "--grouping", "branch")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want LABEL=VALUE")
}

func TestSlowCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal.jsonl")
	common := []string{"check", "--topology", "1/2/1/2", "--ramp-up", "10s", "--runtime", "20s", "--journal", j}

	baseline, stderr, code := run(t, "", append(common, "--output", "json")...)
	require.Equal(t, 0, code, stderr)
	basePath := filepath.Join(dir, "capacity.json")
	require.NoError(t, os.WriteFile(basePath, []byte(baseline), 0o644))
	var doc struct {
		Capacity struct {
			MaxGoodput float64
			Critical   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(baseline), &doc))
	require.Equal(t, "app/cpu", doc.Capacity.Critical)

	// Capacity holds: exit 0.
	out, stderr, code := run(t, "", append(common, "--min-goodput", fmt.Sprint(doc.Capacity.MaxGoodput*0.9), "--critical", "app/cpu",
		"--baseline", basePath, "--max-regression", "5%")...)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "min-goodput")
	assert.Empty(t, stderr)

	// Two violated checks: exit 1 and one line each on stderr.
	_, stderr, code = run(t, "", append(common, "--min-goodput", fmt.Sprint(doc.Capacity.MaxGoodput*1.2), "--critical", "cluster/cpu")...)
	assert.Equal(t, 1, code)
	assert.Equal(t, 2, countLines(stderr), stderr)
	assert.Contains(t, stderr, "check min-goodput failed")
	assert.Contains(t, stderr, "check critical failed: critical resource is app/cpu; expected cluster/cpu")

	// A regression: too few Tomcat threads move the bottleneck to the pool.
	_, stderr, code = run(t, "", "check", "--topology", "1/2/1/2", "--alloc", "400-3-3", "--ramp-up", "10s", "--runtime", "20s", "--journal", j,
		"--baseline", basePath, "--max-regression", "5%", "--critical", "app/cpu")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "check max-regression-goodput failed")
	assert.Contains(t, stderr, "critical resource is app/threads")

	// From the journal alone, no experiment run.
	_, stderr, code = run(t, "", "check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--critical", "app/cpu")
	assert.Equal(t, 0, code, stderr)
	// The journal holds 400-3-3 too: without --alloc, the default start
	// allocation is checked, as the help says (check --help's example).
	out, stderr, code = run(t, "", "check", "--from-journal", j, "--topology", "1/2/1/2", "--critical", "app/cpu")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "1/2/1/2 400-150-60 on sim")

	// Usage errors: exit 2. A journal's deployment is checked as a fresh one.
	otherBase := filepath.Join(dir, "capacity-1414.json")
	require.Contains(t, baseline, `"topology": "1/2/1/2"`)
	require.NoError(t, os.WriteFile(otherBase, []byte(strings.Replace(baseline, `"topology": "1/2/1/2"`, `"topology": "1/4/1/4"`, 1)), 0o644))
	for _, args := range [][]string{
		{"check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--critical", "nope/cpu"},
		{"check", "--from-journal", j, "--topology", "1/2/1/2", "--alloc", "400-150-60", "--baseline", otherBase, "--max-regression", "5%"},
		{"check", "--topology", "1/2/1/2"},
		{"check", "--topology", "1/2/1/2", "--max-regression", "5%"},
		{"check", "--topology", "1/2/1/2", "--baseline", basePath, "--max-regression", "five"},
		{"check", "--topology", "1/2/1/2", "--critical", "cpu"},
		{"check", "--from-journal", j, "--critical", "app/cpu"},
	} {
		_, stderr, code := run(t, "", args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Equal(t, 1, countLines(stderr), stderr)
	}
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}

// Issue 24: a second topology pushed under the same job replaced the first;
// grouping by topology failed with a raw client error and exit 1. A
// grouping label that a series carries failed the push at the end.
func TestPushesAreGroupedByCommandTopologyAndRunner(t *testing.T) {
	url := startPushgateway(t)
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		_, stderr, code := run(t, "", "find-critical", "--topology", topo, "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
			"--pushgateway", url, "--job", "capacity")
		require.Equal(t, 0, code, stderr)
	}
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	topologies := map[string]bool{}
	for _, m := range families["softalloc_critical_resource_info"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "topology" {
				topologies[l.GetValue()] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"1/2/1/2": true, "1/4/1/4": true}, topologies, "both groups kept")

	// Nor does another command's push replace them: recommend's runs find-critical's procedure too.
	_, stderr, code := run(t, "", "recommend", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
		"--pushgateway", url, "--job", "capacity")
	require.Equal(t, 0, code, stderr)
	resp, err = http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	families, err = parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	groups := map[string]bool{}
	for _, m := range families["softalloc_critical_resource_info"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		groups[labels["command"]+" "+labels["topology"]] = true
	}
	assert.Equal(t, map[string]bool{"find-critical 1/2/1/2": true, "find-critical 1/4/1/4": true, "recommend 1/2/1/2": true}, groups)

	for label, msg := range map[string]string{
		"topology=x": "softalloc groups every push by command, topology, runner itself",
		"check=x":    "softalloc's series carry a check label",
		"job=x":      "job is the Pushgateway's own grouping label; set it with --job",
		"__name__=x": "reserved by Prometheus",
		"1abc=x":     "want a label name",
	} {
		_, stderr, code := run(t, "", "find-critical", "--topology", "1/2/1/2", "--no-journal", "--pushgateway", url, "--grouping", label)
		assert.Equal(t, 2, code, label)
		assert.Contains(t, stderr, msg, label)
		assert.Equal(t, 1, countLines(stderr), stderr)
	}
}

// Basic auth and TLS, against a real Pushgateway that demands both.
func TestPushWithBasicAuthAndTLS(t *testing.T) {
	htpasswd, err := exec.LookPath("htpasswd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("htpasswd (apache2-utils) is not installed in CI")
		}
		t.Skip("SKIPPED: htpasswd is not installed (apache2-utils): the basic-auth push test did not run")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := selfSignedCert(t, dir)
	hash, err := exec.Command(htpasswd, "-nbBC", "10", "ci", "s3cret").Output()
	require.NoError(t, err)
	_, h, _ := strings.Cut(strings.TrimSpace(string(hash)), ":")
	web := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(web, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  ci: %s\n",
		certFile, keyFile, h)), 0o600))
	url := startPushgatewayWith(t, "https", "--web.config.file="+web)

	args := []string{"find-critical", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal", "--pushgateway", url}
	_, stderr, code := run(t, "", append(args, "--pushgateway-ca-file", caFile)...)
	assert.Equal(t, 1, code, "no credentials: refused by the gateway")
	assert.Contains(t, stderr, "401")

	// Credentials in the URL are basic auth, and stay out of the messages.
	withCreds := strings.Replace(url, "https://", "https://ci:s3cret@", 1)
	_, stderr, code = run(t, "", "find-critical", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
		"--pushgateway", withCreds, "--pushgateway-ca-file", caFile)
	require.Equal(t, 0, code, stderr)
	_, stderr, code = run(t, "", "find-critical", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
		"--pushgateway", strings.Replace(withCreds, "s3cret", "wrong", 1), "--pushgateway-ca-file", caFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "401")
	assert.NotContains(t, stderr, "wrong")

	t.Setenv("SOFTALLOC_PUSHGATEWAY_PASSWORD", "s3cret")
	_, stderr, code = run(t, "", append(args, "--pushgateway-user", "ci")...)
	assert.Equal(t, 1, code, "an unknown CA is refused")
	assert.Contains(t, stderr, "certificate")

	_, stderr, code = run(t, "", append(args, "--pushgateway-user", "ci", "--pushgateway-ca-file", caFile)...)
	require.Equal(t, 0, code, stderr)

	_, stderr, code = run(t, "", append(args, "--pushgateway-user", "ci", "--pushgateway-ca-file", filepath.Join(dir, "web.yml"))...)
	assert.Equal(t, 2, code, "a CA file without a certificate is refused before the campaign")
	assert.Contains(t, stderr, "no PEM certificate")
}

// Issue 24: check --junit, one test case per check, failures marked.
func TestSlowCheckJUnit(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "capacity.xml")
	_, stderr, code := run(t, "", "check", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
		"--min-goodput", "1", "--critical", "db/cpu", "--junit", report)
	assert.Equal(t, 1, code, stderr)
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), `<?xml version="1.0" encoding="UTF-8"?>`))
	type junit struct {
		Suites []struct {
			Tests    int     `xml:"tests,attr"`
			Failures int     `xml:"failures,attr"`
			Errors   *string `xml:"errors,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	var doc junit
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	assert.Equal(t, 2, s.Tests)
	assert.Equal(t, 1, s.Failures)
	require.NotNil(t, s.Errors, "the JUnit schema requires errors")
	assert.Equal(t, "0", *s.Errors)
	require.Len(t, s.Cases, 2)
	assert.Equal(t, "min-goodput", s.Cases[0].Name)
	assert.Nil(t, s.Cases[0].Failure)
	assert.Equal(t, "critical", s.Cases[1].Name)
	require.NotNil(t, s.Cases[1].Failure)
	assert.Equal(t, "critical resource is app/cpu; expected db/cpu", s.Cases[1].Failure.Message)

	// Recording a baseline checks nothing: one passing case says what was
	// measured (a report without a case fails Jenkins's junit step).
	_, stderr, code = run(t, "", "check", "--topology", "1/2/1/2", "--runtime", "20s", "--ramp-up", "10s", "--no-journal",
		"--output", "json", "--junit", report)
	require.Equal(t, 0, code, stderr)
	data, err = os.ReadFile(report)
	require.NoError(t, err)
	doc = junit{}
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Len(t, doc.Suites, 1)
	require.Len(t, doc.Suites[0].Cases, 1)
	assert.Equal(t, 1, doc.Suites[0].Tests)
	assert.Equal(t, "capacity", doc.Suites[0].Cases[0].Name)
	assert.Nil(t, doc.Suites[0].Cases[0].Failure)

	_, stderr, code = run(t, "", "check", "--topology", "1/2/1/2", "--min-goodput", "1", "--junit", filepath.Join(dir, "x.json"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--junit "`+filepath.Join(dir, "x.json")+`": want a .xml file`)
}

// Issue 35: a password file was read whole (/dev/zero ran softalloc out of
// memory); more than 4 KiB is not a password.
func TestPushgatewayPasswordFileIsBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "password")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", 4097)), 0o600))
	for _, file := range []string{big, "/dev/zero"} {
		_, stderr, code := run(t, "", "find-critical", "--topology", "1/2/1/2", "--no-journal", "--pushgateway", "http://127.0.0.1:1",
			"--pushgateway-user", "ci", "--pushgateway-password-file", file)
		assert.Equal(t, 2, code, file)
		assert.Equal(t, fmt.Sprintf("softalloc: --pushgateway-password-file %q: larger than the 4 KiB limit for this file; is it the right one?\n", file), stderr)
	}
}

// Issue 35: a password in the --pushgateway URL was printed in the errors
// of a failed push and of a refused setting.
func TestPushgatewayURLPasswordIsRedacted(t *testing.T) {
	dead := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, stderr, code := run(t, "", "find-critical", "--topology", "1/4/1/4", "--ramp-up", "10s", "--runtime", "20s", "--no-journal",
		"--pushgateway", "http://ci:s3cret@"+dead)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "push to http://ci:xxxxx@"+dead+" ")
	assert.NotContains(t, stderr, "s3cret")

	_, stderr, code = run(t, "", "find-critical", "--topology", "1/4/1/4", "--no-journal",
		"--pushgateway", "http://ci:s3cret@"+dead, "--pushgateway-ca-file", filepath.Join(t.TempDir(), "none.pem"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--pushgateway http://ci:xxxxx@"+dead+": CA file: ")
	assert.NotContains(t, stderr, "s3cret")

	_, stderr, code = run(t, "", "find-critical", "--topology", "1/4/1/4", "--no-journal", "--pushgateway", "ftp://ci:s3cret@"+dead)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--pushgateway "ftp://ci:xxxxx@`+dead+`": want the Pushgateway's URL`)
	assert.NotContains(t, stderr, "s3cret")
}

// Issue 35: settings that pushed something other than what was asked are
// refused before the campaign, each on one line naming the bad value.
func TestPushgatewaySettingsThatWouldPushWrongAreRefused(t *testing.T) {
	t.Setenv("SOFTALLOC_PUSHGATEWAY_PASSWORD", "")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	pwFile := filepath.Join(t.TempDir(), "password")
	require.NoError(t, os.WriteFile(pwFile, []byte("pw\n"), 0o600))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		// A user without a password pushed "ci:" as its credentials.
		{[]string{"--pushgateway", "http://127.0.0.1:1", "--pushgateway-user", "ci"},
			"--pushgateway-user ci: no password; want it in SOFTALLOC_PUSHGATEWAY_PASSWORD or --pushgateway-password-file"},
		{[]string{"--pushgateway", "http://127.0.0.1:1", "--pushgateway-user", "ci", "--pushgateway-password-file", empty},
			"--pushgateway-user ci: no password; want it in SOFTALLOC_PUSHGATEWAY_PASSWORD or --pushgateway-password-file " + fmt.Sprintf("(%q is empty)", empty)},
		{[]string{"--pushgateway", "http://ci@127.0.0.1:1"},
			`--pushgateway "http://ci@127.0.0.1:1": a user without a password; want USER:PASSWORD in the URL, or --pushgateway-user with SOFTALLOC_PUSHGATEWAY_PASSWORD or --pushgateway-password-file`},
		{[]string{"--pushgateway", "http://ci:pw@127.0.0.1:1", "--pushgateway-password-file", pwFile},
			`--pushgateway "http://ci:xxxxx@127.0.0.1:1": a user in the URL and a password in --pushgateway-password-file; want one of them`},
		{[]string{"--pushgateway", "http://ci:pw@127.0.0.1:1", "--pushgateway-user", "other"},
			`--pushgateway "http://ci:xxxxx@127.0.0.1:1": a user in the URL and --pushgateway-user other; want one of them`},
		// The last of a repeated label was pushed, the others dropped.
		{[]string{"--pushgateway", "http://127.0.0.1:1", "--grouping", "branch=main", "--grouping", "branch=dev"},
			`--grouping "branch=dev": branch is already given (branch=main); want each label once`},
		// The push went to .../metrics/job/x/metrics/job/softalloc/...
		{[]string{"--pushgateway", "http://127.0.0.1:1/metrics/job/x"},
			`--pushgateway "http://127.0.0.1:1/metrics/job/x": want the Pushgateway's base URL, without /metrics (softalloc adds /metrics/job/<job>/...)`},
		{[]string{"--pushgateway", "http://127.0.0.1:1/metrics"},
			`--pushgateway "http://127.0.0.1:1/metrics": want the Pushgateway's base URL, without /metrics (softalloc adds /metrics/job/<job>/...)`},
		{[]string{"--pushgateway", "http://127.0.0.1:1/?x=1"},
			`--pushgateway "http://127.0.0.1:1/?x=1": want the Pushgateway's base URL, without a query or fragment`},
	} {
		_, stderr, code := run(t, "", append([]string{"find-critical", "--topology", "1/2/1/2", "--no-journal"}, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Equal(t, "softalloc: "+c.msg+"\n", stderr, c.args)
	}
}

// Issue 35: the exec runner's program inherited softalloc's environment,
// the Pushgateway's password with it.
func TestExecProgramDoesNotInheritThePushgatewayPassword(t *testing.T) {
	t.Setenv("SOFTALLOC_PUSHGATEWAY_PASSWORD", "s3cret")
	t.Setenv("SOFTALLOC_TEST_PLAIN", "kept")
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	prog := filepath.Join(dir, "trial.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nenv > "+envFile+"\nexit 3\n"), 0o755))
	_, stderr, code := run(t, "", "simulate", "--topology", "1/2/1/2", "--users", "100", "--no-journal",
		"--runner", "exec", "--runner-cmd", prog, "--runner-retries", "0")
	require.NotEqual(t, 0, code, stderr)
	env, err := os.ReadFile(envFile)
	require.NoError(t, err, stderr)
	assert.Contains(t, string(env), "SOFTALLOC_TEST_PLAIN=kept\n", "the rest of the environment is passed on")
	assert.NotContains(t, string(env), "SOFTALLOC_PUSHGATEWAY_PASSWORD")
	assert.NotContains(t, string(env), "s3cret")
}

// Issue 35: the TLS files were read whole too (/dev/zero as a CA file ran
// softalloc out of memory).
func TestPushgatewayTLSFilesAreBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.pem")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", 1<<20+1)), 0o600))
	for _, file := range []string{big, "/dev/zero"} {
		for _, flags := range [][]string{
			{"--pushgateway-ca-file", file},
			{"--pushgateway-cert-file", file, "--pushgateway-key-file", file},
		} {
			_, stderr, code := run(t, "", append([]string{"find-critical", "--topology", "1/2/1/2", "--no-journal", "--pushgateway", "https://127.0.0.1:1"}, flags...)...)
			assert.Equal(t, 2, code, flags)
			assert.Contains(t, stderr, fmt.Sprintf("%q: larger than the 1024 KiB limit for this file", file), flags)
			assert.Equal(t, 1, countLines(stderr), stderr)
		}
	}
}
