// Package metrics turns a command's results into Prometheus metrics, named
// by Prometheus conventions (base units in the name, _info for labels-only
// facts, gauges for one campaign's figures), for CI capacity checks: a text
// file for node_exporter's textfile collector, or a push to a Pushgateway.
// Every name is written here, once.
package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Series are the metrics softalloc writes, by name: the help text, and the
// labels each carries besides command, topology and runner. The README's
// table is this one.
var Series = map[string]SeriesInfo{
	"softalloc_critical_resource_info":                {"The resource that saturates first (value 1): hardware, or a pool that starves it (check of a small allocation).", []string{"tier", "resource"}},
	"softalloc_critical_resource_utilization_ratio":   {"Utilisation of the critical resource when it was found saturated.", []string{"tier", "resource"}},
	"softalloc_saturation_workload_users":             {"Workload at which the critical resource first saturated.", nil},
	"softalloc_max_throughput_pages_per_second":       {"Highest throughput seen, pages per second.", nil},
	"softalloc_goodput_pages_per_second":              {"Highest goodput (pages answered within the SLA threshold per second) of an allocation.", []string{"allocation", "sla_seconds"}},
	"softalloc_min_jobs":                              {"Concurrent jobs in the critical tier at the minimum saturating workload (Little's law).", nil},
	"softalloc_min_saturating_workload_users":         {"Minimum saturating workload WLmin.", nil},
	"softalloc_recommended_pool_size":                 {"Recommended pool size per server.", []string{"tier", "pool"}},
	"softalloc_experiments":                           {"Experiments the command needed (recorded ones reused from the journal included).", nil},
	"softalloc_campaign_duration_seconds":             {"Wall time of the command.", nil},
	"softalloc_goodput_vs_best_ratio":                 {"Maximum goodput of an allocation over the best of the grid.", []string{"allocation", "role"}},
	"softalloc_check_passed":                          {"1 when a capacity check held, 0 when it failed.", []string{"check"}},
	"softalloc_trial_throughput_pages_per_second":     {"Throughput of an allocation at a workload, pages per second.", []string{"allocation", "users"}},
	"softalloc_trial_goodput_pages_per_second":        {"Goodput of an allocation at a workload and SLA threshold, pages per second.", []string{"allocation", "users", "sla_seconds"}},
	"softalloc_trial_cpu_utilization_ratio":           {"Mean CPU utilisation of a server in a trial.", []string{"allocation", "users", "server"}},
	"softalloc_advice_windows":                        {"Windows of recorded traffic advise used (after dropping unusable ones).", nil},
	"softalloc_predicted_saturation_pages_per_second": {"Page throughput at which advise predicts the critical resource reaches the hardware threshold.", nil},
}

// SeriesInfo is one metric's help and labels.
type SeriesInfo struct {
	Help   string
	Labels []string
}

// commonLabels are on every series in a file; a push groups by them instead.
// The command keeps one command's results from another's: files of
// recommend and check in one node_exporter directory were the same series
// twice (node_exporter dropped them), and their pushes replaced each other.
var commonLabels = []string{"command", "topology", "runner"}

// sample is one value of one series.
type sample struct {
	name   string
	labels []string // values, in Series[name].Labels order
	value  float64
}

// Set is one command's results, for one topology (or deployment name) and
// runner.
type Set struct {
	command  string
	topology string
	runner   string
	samples  []sample
}

// New starts an empty set of a command ("recommend").
func New(command, topology, runner string) *Set {
	return &Set{command: command, topology: topology, runner: runner}
}

// set records a value; labels are name, value pairs in the series' order.
func (s *Set) set(name string, v float64, labels ...string) {
	ser, ok := Series[name]
	if !ok || len(labels) != 2*len(ser.Labels) {
		panic("metrics: " + name + ": not a series, or the wrong labels") // a programming error, caught by the tests
	}
	vals := make([]string, len(ser.Labels))
	for i := range ser.Labels {
		vals[i] = labels[2*i+1]
	}
	// The last value of a series and label set wins, as a gauge's Set does.
	for i := range s.samples {
		if s.samples[i].name == name && strings.Join(s.samples[i].labels, "\x00") == strings.Join(vals, "\x00") {
			s.samples[i].value = v
			return
		}
	}
	s.samples = append(s.samples, sample{name, vals, v})
}

// Registry is the set as gauges; withCommon adds the command, topology and
// runner labels (a file), without them a push's grouping key carries them.
func (s *Set) Registry(withCommon bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	vecs := map[string]*prometheus.GaugeVec{}
	for _, x := range s.samples {
		ser := Series[x.name]
		labels, vals := ser.Labels, x.labels
		if withCommon {
			labels = append(append([]string{}, commonLabels...), labels...)
			vals = append([]string{s.command, s.topology, s.runner}, vals...)
		}
		g, ok := vecs[x.name]
		if !ok {
			g = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: x.name, Help: ser.Help}, labels)
			reg.MustRegister(g)
			vecs[x.name] = g
		}
		g.WithLabelValues(vals...).Set(x.value)
	}
	return reg
}

// Experiments records how many experiments the command needed.
func (s *Set) Experiments(n int) { s.set("softalloc_experiments", float64(n)) }

// Duration records the command's wall time.
func (s *Set) Duration(d time.Duration) { s.set("softalloc_campaign_duration_seconds", d.Seconds()) }

// Critical records the critical resource.
func (s *Set) Critical(c algorithms.Critical) {
	s.set("softalloc_critical_resource_utilization_ratio", c.Utilization, "tier", c.Tier, "resource", c.Resource)
	s.Capacity(c.MaxThroughput, c.Tier, c.Resource, c.SaturationWorkload)
}

// Capacity records the highest throughput and, when one saturated (tier
// not empty), the first resource to saturate and the workload where it did.
func (s *Set) Capacity(maxThroughputPages float64, tier, resource string, saturationWorkload int) {
	if tier != "" {
		s.set("softalloc_critical_resource_info", 1, "tier", tier, "resource", resource)
		s.set("softalloc_saturation_workload_users", float64(saturationWorkload))
	}
	s.set("softalloc_max_throughput_pages_per_second", maxThroughputPages)
}

// Goodput records an allocation's highest goodput at an SLA threshold.
func (s *Set) Goodput(allocation string, sla float64, v float64) {
	s.set("softalloc_goodput_pages_per_second", v, "allocation", allocation, "sla_seconds", strconv.FormatFloat(sla, 'g', -1, 64))
}

// Recommendation records recommend's answer.
func (s *Set) Recommendation(r algorithms.Recommendation) {
	s.Critical(r.Critical)
	s.set("softalloc_min_jobs", r.MinJobs.MinJobs)
	s.set("softalloc_min_saturating_workload_users", float64(r.MinJobs.WLmin))
	s.poolSizes(r.Tiers)
}

func (s *Set) poolSizes(tiers []algorithms.TierRecommendation) {
	for _, t := range tiers {
		s.set("softalloc_recommended_pool_size", float64(t.ThreadsPerServer), "tier", t.Name, "pool", algorithms.PoolThreads)
		if t.ConnectionsPerServer != nil {
			s.set("softalloc_recommended_pool_size", float64(*t.ConnectionsPerServer), "tier", t.Name, "pool", algorithms.PoolConnections)
		}
	}
}

// Advice records advise's answer: recommend's series where they mean the
// same (the critical resource, minJobs, the pool sizes), and the predicted
// saturation in its own series, since nothing was seen. A saturation
// workload in users is recorded only when the model knows users (closed).
func (s *Set) Advice(a algorithms.Advice) {
	s.set("softalloc_critical_resource_info", 1, "tier", a.Critical.Tier, "resource", a.Critical.Resource)
	if a.Critical.SaturationWorkload > 0 {
		s.set("softalloc_saturation_workload_users", float64(a.Critical.SaturationWorkload))
	}
	s.set("softalloc_predicted_saturation_pages_per_second", a.SaturationThroughput)
	s.set("softalloc_advice_windows", float64(a.Used))
	s.set("softalloc_min_jobs", a.MinJobs.MinJobs)
	s.poolSizes(a.Tiers)
}

// TrialsGoodput records, per allocation, the highest goodput at sla over trials.
func (s *Set) TrialsGoodput(trials []algorithms.Trial, sla float64, format func(algorithms.Allocation) string) {
	best := map[string]float64{}
	for _, t := range trials {
		a := format(t.Experiment.Allocation)
		if g := t.Observation.Goodput(sla); g > best[a] {
			best[a] = g
		}
	}
	for _, a := range sortedKeys(best) {
		s.Goodput(a, sla, best[a])
	}
}

// CheckPassed records whether a capacity check held.
func (s *Set) CheckPassed(check string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	s.set("softalloc_check_passed", v, "check", check)
}

// GoodputRatio records an allocation's maximum goodput over the grid's best,
// and the role it played ("recommended", "best", "practitioners", ...).
func (s *Set) GoodputRatio(allocation, role string, ratio float64) {
	s.set("softalloc_goodput_vs_best_ratio", ratio, "allocation", allocation, "role", role)
}

// Trial records one trial of an allocation at a workload: throughput,
// goodput by SLA threshold (in seconds) and CPU by server.
func (s *Set) Trial(allocation string, users int, throughput float64, goodput map[string]float64, cpu map[string]float64) {
	u := strconv.Itoa(users)
	s.set("softalloc_trial_throughput_pages_per_second", throughput, "allocation", allocation, "users", u)
	for _, sla := range sortedKeys(goodput) {
		s.set("softalloc_trial_goodput_pages_per_second", goodput[sla], "allocation", allocation, "users", u, "sla_seconds", sla)
	}
	for _, server := range sortedKeys(cpu) {
		s.set("softalloc_trial_cpu_utilization_ratio", cpu[server], "allocation", allocation, "users", u, "server", server)
	}
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteFile writes the text exposition format atomically and durably (a
// synced temporary file renamed over the target), so a textfile collector
// never reads half a file; through a symlink to its target, never over a
// device or pipe.
func (s *Set) WriteFile(path string) error {
	mfs, err := s.Registry(true).Gather()
	if err != nil {
		return fmt.Errorf("metrics file %q: %w", path, err)
	}
	err = safefile.Write(path, 0o644, func(w io.Writer) error {
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("metrics file %q: %w", path, err)
	}
	return nil
}

// Pushgateway says where and how to push.
type Pushgateway struct {
	URL string
	Job string
	// Grouping are labels of the grouping key besides command, topology and
	// runner, which every push carries: two topologies (or commands) pushed
	// under one job are two groups, not one replacing the other.
	Grouping map[string]string
	// User and Password authenticate (HTTP basic auth) when User is set.
	User, Password string
	// CAFile verifies the gateway's certificate; CertFile and KeyFile are a
	// client certificate for mutual TLS.
	CAFile, CertFile, KeyFile string
}

// CheckGrouping refuses a grouping label the Pushgateway or softalloc
// reserve, or one that is not a label name.
func CheckGrouping(g map[string]string) error {
	for _, k := range sortedLabels(g) {
		switch {
		case k == "job":
			return fmt.Errorf("--grouping %q: job is the Pushgateway's own grouping label; set it with --job", k)
		case slices.Contains(commonLabels, k):
			return fmt.Errorf("--grouping %q: softalloc groups every push by %s itself", k, strings.Join(commonLabels, ", "))
		case seriesLabels()[k]:
			return fmt.Errorf("--grouping %q: softalloc's series carry a %s label, which a grouping label may not repeat (the push would be refused)", k, k)
		case strings.HasPrefix(k, "__"):
			return fmt.Errorf("--grouping %q: label names starting with __ are reserved by Prometheus", k)
		case !model.LegacyValidation.IsValidLabelName(k):
			return fmt.Errorf("--grouping %q: want a label name of letters, digits and _, not starting with a digit", k)
		}
	}
	return nil
}

// seriesLabels are the labels any series carries.
func seriesLabels() map[string]bool {
	out := map[string]bool{}
	for _, ser := range Series {
		for _, l := range ser.Labels {
			out[l] = true
		}
	}
	return out
}

func sortedLabels(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// client is the HTTP client of a push, with its TLS settings.
func (p Pushgateway) client() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if p.CAFile != "" || p.CertFile != "" || p.KeyFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if p.CAFile != "" {
			pem, err := readBounded(p.CAFile)
			if err != nil {
				return nil, fmt.Errorf("CA file: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("CA file %q: no PEM certificate in it", p.CAFile)
			}
		}
		if (p.CertFile == "") != (p.KeyFile == "") {
			return nil, errors.New("a client certificate needs both its cert file and its key file")
		}
		if p.CertFile != "" {
			certPEM, err := readBounded(p.CertFile)
			if err != nil {
				return nil, fmt.Errorf("client certificate: %w", err)
			}
			keyPEM, err := readBounded(p.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("client key: %w", err)
			}
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return nil, fmt.Errorf("client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}, nil
}

// readBounded reads a TLS file up to safefile.MaxInput: a certificate
// bundle is far smaller, and an endless file (/dev/zero) must not take all
// the memory. A pipe is fine, unlike with safefile.Read.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := safefile.ReadAll(f, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", path, err) // an open error names it already
	}
	return b, nil
}

// CheckTLS reads the TLS files now, so that a bad one is refused before a
// campaign rather than at its end.
func (p Pushgateway) CheckTLS() error {
	_, err := p.client()
	return err
}

// Redact is a URL as messages show it: as given, but its password replaced
// by xxxxx (url.URL.Redacted); when it does not parse as scheme://host, all
// before its last @, which may be a user and password.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Opaque == "" {
		if _, ok := u.User.Password(); !ok {
			return raw // nothing to hide; Redacted would rewrite it ("http://" as "http:")
		}
		return u.Redacted()
	}
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	prefix := ""
	if scheme, _, ok := strings.Cut(raw[:at], "://"); ok {
		prefix = scheme + "://"
	}
	return prefix + "xxxxx" + raw[at:]
}

// Push sends the set to a Pushgateway, replacing its group (job, command,
// topology, runner and the extra grouping labels).
func (s *Set) Push(ctx context.Context, p Pushgateway) error {
	shown := Redact(p.URL)
	client, err := p.client()
	if err != nil {
		return fmt.Errorf("push to %s: %w", shown, err)
	}
	// Credentials in the URL become basic auth, and the URL the push
	// library gets (and prints in its errors) goes without them.
	if u, err := url.Parse(p.URL); err == nil && u.User != nil {
		if p.User == "" {
			p.User = u.User.Username()
			p.Password, _ = u.User.Password()
		}
		u.User = nil
		p.URL = u.String()
	}
	pusher := push.New(p.URL, p.Job).Gatherer(s.Registry(false)).Client(client).
		Grouping("command", s.command).Grouping("topology", s.topology).Grouping("runner", s.runner)
	for _, k := range sortedLabels(p.Grouping) {
		pusher = pusher.Grouping(k, p.Grouping[k])
	}
	if p.User != "" {
		pusher = pusher.BasicAuth(p.User, p.Password)
	}
	if err := pusher.PushContext(ctx); err != nil {
		return fmt.Errorf("push to %s (job %q): %w", shown, p.Job, err)
	}
	return nil
}

// ParseGrouping reads LABEL=VALUE pairs.
func ParseGrouping(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--grouping %q: want LABEL=VALUE", p)
		}
		// The push would carry the last value alone, without a word.
		if prev, dup := out[k]; dup {
			return nil, fmt.Errorf("--grouping %q: %s is already given (%s=%s); want each label once", p, k, k, prev)
		}
		out[k] = v
	}
	return out, CheckGrouping(out)
}
