package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden-observations.json from the current code")

// goldenCase is one trial whose observation (and page count) must not change
// under pure performance work.
type goldenCase struct {
	topo, alloc string
	users       int
	seed        uint64
	defaultTime bool
}

func (g goldenCase) name() string {
	s := fmt.Sprintf("%s_%s_%d_seed%d", g.topo, g.alloc, g.users, g.seed)
	if g.defaultTime {
		s += "_default"
	}
	return s
}

var goldenCases = []goldenCase{
	{"1/2/1/2", "400-150-60", 6000, 1, false},
	{"1/4/1/4", "400-150-60", 7800, 2, false},
	{"1/2/1", "400-150-60", 1000, 1, false},
	{"1/2/1/2", "400-6-6", 6000, 2, false},
	{"1/4/1/4", "30-6-100", 7800, 1, false},
	{"1/2/1", "400-200-200", 6000, 2, false},
	{"1/4/1/4", "400-200-200", 1000, 1, false},
	{"1/2/1/2", "30-6-100", 7800, 2, false},
	{"1/4/1/4", "400-150-60", 7000, 1, true},
}

// goldenDigest is the SHA-256 of the JSON of the observation and the page
// counts (Events and LazyEvents are left out: fewer events is the point).
func goldenDigest(t *testing.T, g goldenCase) string {
	e := experiment(t, g.topo, g.alloc, g.users, 30*time.Second, 60*time.Second)
	if g.defaultTime {
		e.Timing = DefaultTiming()
	}
	o, st, err := Simulate(t.Context(), nil, e, g.seed)
	require.NoError(t, err)
	require.NotNil(t, o.Window, "a fixed trial of the simulator has intervals")
	b, err := json.Marshal(struct {
		Obs                any
		Pages, WarmUpPages int64
	}{withoutIntervals(o), st.Pages, st.WarmUpPages})
	require.NoError(t, err)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// withoutIntervals is o as it was before trials had intervals: the digests
// pin the draws and what the trial measures, and recording the window as a
// series must change neither.
func withoutIntervals(o algorithms.Observation) algorithms.Observation {
	o.ThroughputHalfWidth, o.GoodputIntervals, o.Window = 0, nil, nil
	o.Servers = slices.Clone(o.Servers)
	for i := range o.Servers {
		s := &o.Servers[i]
		s.CPUHalfWidth = 0
		s.Pools = slices.Clone(s.Pools)
		for j := range s.Pools {
			s.Pools[j].BusyHalfWidth = 0
		}
	}
	return o
}

// TestSlowGoldenObservations checks that the simulator's results are
// bit-identical to the recorded ones.
func TestSlowGoldenObservations(t *testing.T) {
	path := filepath.Join("testdata", "golden-observations.json")
	got := map[string]string{}
	for _, g := range goldenCases {
		got[g.name()] = goldenDigest(t, g)
	}
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		return
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var want map[string]string
	require.NoError(t, json.Unmarshal(b, &want))
	for _, g := range goldenCases {
		require.Equal(t, want[g.name()], got[g.name()], "observation of %s changed", g.name())
	}
}
