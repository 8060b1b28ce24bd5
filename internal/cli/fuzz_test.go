package cli

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/fuzzcheck"
	"github.com/softalloc/softalloc/internal/metrics"
)

// FuzzParseMeasured feeds arbitrary measurement files to size's parser and
// to CalculateMinAllocation: a refusal is one line, never a panic, and what
// is accepted sizes pools or says in one line why it cannot.
func FuzzParseMeasured(f *testing.F) {
	for _, s := range []string{
		"topology: 1/4/1/4\ncritical: cluster\ntiers:\n  - {name: web, throughput: 847, responseTime: 0.147}\n  - {name: app, throughput: 847, responseTime: 0.0378}\n  - {name: cluster, throughput: 2728, responseTime: 0.0082}\n",
		"topology: 1/2/1/2\ncritical: app\nminJobs: 26\ntiers:\n  - {name: web, throughput: 740, responseTime: 0.137}\n  - {name: app, throughput: 740, responseTime: 0.0351}\n",
		`{"topology": "1/2/1", "critical": "db", "minJobs": 1e300, "tiers": []}`,
		"topology: 1/2/1/2\ncritical: app\ntiers:\n  - {name: app, throughput: .nan, responseTime: .inf}\n",
		"", "topology: [", "deployment: /dev/zero\ncritical: app\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, m, err := parseMeasured(data, "fuzz.yaml", false)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		minJobs := 0.0
		if m.MinJobs != nil {
			minJobs = *m.MinJobs
		}
		sz, err := algorithms.CalculateMinAllocation(d, m.Critical, minJobs, m.Tiers)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.False(t, fuzzcheck.HasNaN(sz))
		for _, ts := range sz.Tiers {
			require.GreaterOrEqual(t, ts.TotalThreads, 1)
			require.LessOrEqual(t, ts.TotalThreads, math.MaxInt32)
		}
	})
}

// FuzzParseBaseline feeds arbitrary baselines to check.
func FuzzParseBaseline(f *testing.F) {
	for _, s := range []string{
		`{"capacity": {"topology": "1/2/1/2", "runner": "sim", "allocation": "400-150-60", "slaSeconds": 2, "maxGoodput": 700, "maxThroughput": 740, "critical": "app/cpu"}, "checks": [], "ok": true}`,
		`{"maxGoodput": 700, "maxThroughput": 740}`,
		`{"maxGoodput": -5, "maxThroughput": 740}`, `{"maxGoodput": 1e400}`, `[]`, ``, `{"capacity": null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseBaseline(data, "fuzz.json")
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.Greater(t, c.MaxGoodput, 0.0)
		require.Greater(t, c.MaxThroughput, 0.0)
		require.False(t, math.IsInf(c.MaxGoodput, 0) || math.IsInf(c.MaxThroughput, 0))
		// What the figures were measured on and at, which check compares.
		require.Greater(t, c.SLA, 0.0)
		require.NotEmpty(t, c.Runner)
		require.NotEmpty(t, c.Topology)
	})
}

// FuzzFlagValues feeds one text to every flag value parser that reads more
// than a number: --users, --sla, --seeds, --max-regression, --critical,
// --grouping, --heavy, the grid sizes and the memory sizes.
func FuzzFlagValues(f *testing.F) {
	for _, s := range []string{"5000:8000:200", "6000", "5000,6000", "0.5,1,2", "1,2", "5%", "app/cpu", "branch=main",
		"0:40:5", "6,10,20", "1:1000000:1", "nan", "1e309", "-1", "a/b/c", "=", "", ",", "::", "10%%", " 5 % ",
		"1,1", "2,2s", "5, 05", "0.5,500ms", "48MiB", "43008KiB", "1.5G", "0x1p3M", "1e300GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if users, err := parseUsers(s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			require.NotEmpty(t, users)
			require.LessOrEqual(t, len(users), 10000)
			for _, u := range users {
				require.True(t, u >= 1 && u <= maxUsers, "%d users", u)
			}
			requireDistinct(t, users)
		}
		if slas, err := parseSLAs(s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			for _, x := range slas {
				require.True(t, x.Seconds > 0 && !math.IsInf(x.Seconds, 0), "SLA %v", x.Seconds)
			}
			requireDistinct(t, slas)
		}
		if seeds, err := parseSeeds(s, runnerFlags{name: "sim"}); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			requireDistinct(t, seeds)
		}
		if mib, err := parseMebibytes(s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			require.True(t, mib > 0 && mib <= maxMebibytes, "%v MiB", mib)
		}
		if p, err := parsePercent(s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			require.True(t, p >= 0 && p < 1, "%v", p)
		}
		if tier, res, err := parseCritical(s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			require.NotEmpty(t, tier)
			require.NotEmpty(t, res)
		}
		if _, err := metrics.ParseGrouping([]string{s}); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		}
		if levels, err := parseLevels("--heavy", s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			require.LessOrEqual(t, len(levels), 1001)
			requireDistinct(t, levels)
		}
		if sizes, err := parseSizes("--grid-threads", s); err != nil {
			fuzzcheck.RequireOneLine(t, err)
		} else {
			requireDistinct(t, sizes)
		}
	})
}

// requireDistinct fails on a list that holds one value twice: every list
// flag refuses a repeat (issue 35: --seeds 1,1 averaged one run twice).
func requireDistinct[T comparable](t *testing.T, values []T) {
	t.Helper()
	seen := make(map[T]bool, len(values))
	for _, v := range values {
		require.False(t, seen[v], "%v repeated in %v", v, values)
		seen[v] = true
	}
}
