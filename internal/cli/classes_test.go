package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/report"
)

func classesFile(name string) string {
	return filepath.Join("..", "sim", "classes", "testdata", name)
}

func TestDegradationTable(t *testing.T) {
	stdout, stderr, code := run(t, "", "degradation", "--classes", "light,heavy", "--heavy", "0,40", "--runtime", "20s")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "ps\n")
	assert.Contains(t, stdout, "LIGHT DROP")
	var row40 string
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "40" {
			row40 = l
		}
	}
	require.NotEmpty(t, row40, stdout)
	assert.Contains(t, row40, "-57.", "processor sharing: 30 of 70 shares")
}

func TestDegradationJSONAndPlot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "scheme.svg")
	stdout, stderr, code := run(t, "", "degradation", "--classes", "light,heavy", "--heavy", "0:40:20",
		"--policy", "rr,weighted", "--quantum", "10ms,100ms", "--weight", "light=0.8,heavy=0.2",
		"--pools", "per-class", "--runtime", "20s", "--plot", plot, "--output", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Workload string
		Swept    string
		Schemes  []report.SchemeJSON
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, "seed000", doc.Workload)
	assert.Equal(t, "heavy", doc.Swept)
	require.Len(t, doc.Schemes, 3)
	assert.Equal(t, "rr 10ms per-class pools", doc.Schemes[0].Setup)
	last := doc.Schemes[2].Points[2]
	assert.Equal(t, 40, last.Level)
	require.Equal(t, "light", last.Classes[0].Name)
	assert.InDelta(t, 0.2, last.Classes[0].Drop, 0.03, "weighted 0.8")
	b, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
}

func TestDegradationUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"policy":   {"--policy", "fifo"},
		"levels":   {"--heavy", "40:0:5"},
		"class":    {"--classes", "light,nope"},
		"swept":    {"--classes", "light,middle"},
		"weight":   {"--policy", "weighted", "--weight", "light=-1"},
		"pools":    {"--pools", "some"},
		"output":   {"--output", "yaml"},
		"quantum":  {"--policy", "rr", "--quantum", "fast"},
		"users":    {"--hold", "light"},
		"workload": {"--workload", filepath.Join(t.TempDir(), "none.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := run(t, "", append([]string{"degradation", "--heavy", "0,5", "--runtime", "1s"}, args...)...)
			assert.Equal(t, 2, code, stderr)
			assert.True(t, strings.HasPrefix(stderr, "softalloc: "), stderr)
		})
	}
}

// recommend --workload on seed 000 with Linux's slice: the light class misses
// its objective in the shared pool and meets it with the recommended pools.
// A 30 s window keeps the test short; internal/sim/classes checks the file's.
func TestRecommendClasses(t *testing.T) {
	b, err := os.ReadFile(classesFile("seed000-linux.yaml"))
	require.NoError(t, err)
	short := strings.Replace(string(b), "duration: 120s", "duration: 30s", 1)
	require.NotEqual(t, string(b), short)
	file := filepath.Join(t.TempDir(), "seed000-linux.yaml")
	require.NoError(t, os.WriteFile(file, []byte(short), 0o644))
	stdout, stderr, code := run(t, "", "recommend", "--workload", file, "--output", "json")
	require.Equal(t, 0, code, stderr)
	var rec report.ClassRecommendJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &rec))
	require.Len(t, rec.Classes, 2)
	light, heavy := rec.Classes[0], rec.Classes[1]
	assert.False(t, light.Shared.Met)
	assert.True(t, light.Recommended.Met)
	assert.Equal(t, 150, light.Pool)
	assert.Less(t, heavy.Pool, 40)
	assert.Len(t, rec.Schemes, 2)

	stdout, stderr, code = run(t, "", "recommend", "--workload", file)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "critical resource cpu")
	assert.Contains(t, stdout, "degradation scheme as heavy grows")
	assert.Contains(t, stdout, " *", "the shared pool's miss is marked")
}

func TestRecommendClassesUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"topology":     {"--workload", classesFile("seed000-linux.yaml"), "--topology", "1/2/1/2"},
		"missing file": {"--workload", filepath.Join(t.TempDir(), "none.yaml")},
		"no objective": {"--workload", classesFile("seed002-steady.yaml")},
		"output":       {"--workload", classesFile("seed000-linux.yaml"), "--output", "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := run(t, "", append([]string{"recommend"}, args...)...)
			assert.Equal(t, 2, code, stderr)
		})
	}
}

func TestDegradationTrial(t *testing.T) {
	stdout, stderr, code := run(t, "", "degradation", "--trial", "--workload", classesFile("seed002-bursty.yaml"), "--runtime", "10m", "--output", "json")
	require.Equal(t, 0, code, stderr)
	var r report.ClassTrialJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Len(t, r.Classes, 1)
	assert.Len(t, r.Classes[0].Approaches, 4)
	assert.Positive(t, r.Classes[0].Switches)

	stdout, stderr, code = run(t, "", "degradation", "--trial", "--no-selector", "--workload", classesFile("seed004-bounded.yaml"))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "ERRORS/S")
	assert.Contains(t, stdout, "START") // the time series

	_, stderr, code = run(t, "", "degradation", "--trial", "--policy", "rr")
	assert.Equal(t, 2, code, stderr)
	_, stderr, code = run(t, "", "degradation", "--no-selector")
	assert.Equal(t, 2, code, stderr)
}
