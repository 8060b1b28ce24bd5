package live

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// FuzzParseConfig feeds arbitrary runner sections to ParseConfig: a
// refusal is one line, never a panic, and what is accepted has its
// defaults and no NaN.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"target: http://127.0.0.1:18080\nworkload: workload.yaml\nprometheus: http://127.0.0.1:18090\n",
		"target: http://127.0.0.1:18080\nworkload: w.yaml\nprometheus: http://127.0.0.1:18090\nhook: [./testbed.sh, apply, '{web.threads}']\nruntime: 6s\nrampUp: 1e300\n",
		"target: ftp://x\nworkload: w\nprometheus: http://p\n",
		"target: http://a\nworkload: w\nprometheus: http://p\nmaxErrorShare: .nan\nmaxUsers: -1\n",
		"target: http://a\nworkload: w\nprometheus: http://p\ntiers: {web: {presets: [nope]}}\n",
		"target: http://a\nworkload: w\nprometheus: http://p\npages: {throughput: 'rate(p[{window}])', users: '{instance}', rt: x}\n",
		"target: http://a\nworkload: w\nprometheus: http://p\nwarmUp: {settle: true, max: 2m, interval: 5s, within: 0.05, users: 3}\nfingerprint: {files: [a, b]}\n",
		"target: http://a\nworkload: w\nprometheus: http://p\nwarmUp: settle\nfingerprint: {command: []}\n",
		"target: http://a\nworkload: w\nprometheus: http://p\nwarmUp: [1]\nfingerprint: 3\n",
		"targte: http://a\n", "{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var sec map[string]any
		if yaml.Unmarshal(data, &sec) != nil || sec == nil {
			return
		}
		c, err := ParseConfig(sec, "/tmp/fuzz/deployment.yaml")
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		if fuzzcheck.HasNaN(c) {
			t.Fatalf("NaN accepted in %q", data)
		}
		c = c.withDefaults()
		if c.MaxErrorShare == nil || !(*c.MaxErrorShare >= 0 && *c.MaxErrorShare <= 1) {
			t.Fatalf("maxErrorShare out of range in %q", data)
		}
	})
}
