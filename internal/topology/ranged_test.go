package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// A topology whose one tier's replicas are a range reads as a deployment
// file's replicas: 2..8 does: the deployment at the range's lowest count,
// the tier's Scaling the range; a topology without one reads as
// ParseTopology's.
func TestParseTopologyRange(t *testing.T) {
	d, err := ParseTopologyRange(" 1/2..8/1/4 ")
	require.NoError(t, err)
	assert.Equal(t, "1/2/1/4", d.Topology, "the deployment at the range's lowest count")
	assert.Equal(t, 2, d.Tiers[1].Replicas)
	assert.Equal(t, algorithms.Scaling{Min: 2, Max: 8}, *d.Tiers[1].Scaling)
	assert.Equal(t, 1, RangedTier(d))
	assert.Equal(t, "1/2..8/1/4", FormatRangedTopology(d))

	fixed, err := ParseTopologyRange("1/2/1/4")
	require.NoError(t, err)
	want, err := ParseTopology("1/2/1/4")
	require.NoError(t, err)
	assert.Equal(t, want, fixed)
	assert.Equal(t, -1, RangedTier(fixed))
	assert.Equal(t, "1/2/1/4", FormatRangedTopology(fixed))

	for in, want := range map[string]string{
		"1/2..8/1..2/2": "topology \"1/2..8/1..2/2\": two ranges, \"2..8\" and \"1..2\"; softalloc answers for one autoscaled tier at a time: want one tier's replicas as a range min..max and the others a count, e.g. 1/2..8/1/2",
		"1/8..2/1/2":    `topology "1/8..2/1/2": range "8..2": the lower end 8 is above the upper end 2; want min..max, e.g. 2..8`,
		"1/2..2/1/2":    `topology "1/2..2/1/2": range "2..2": want min below max, e.g. 2..8 (a single count is written 2)`,
		"1/0..2/1/2":    `topology "1/0..2/1/2": range "0..2": lower end 0 is not a positive integer (want at least 1 replica)`,
		"1/2..8/x/2":    `topology "1/2..8/x/2": replica count "x" is not a positive integer`,
		"1/2..8":        `topology "1/2..8": want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1), got 2 numbers`,
		"1/2...8/1/2":   `topology "1/2...8/1/2": want a positive integer or a range min..max (e.g. 2..12), got "2...8"`,
	} {
		_, err := ParseTopologyRange(in)
		assert.EqualError(t, err, want, in)
		var e *Error
		assert.ErrorAs(t, err, &e, "a usage error for the commands: %s", in)
	}
	_, err = ParseTopologyRange("1/2..8/1")
	assert.NoError(t, err, "three tiers are a topology too")
}

// ParseRangedTopology (evaluate --replicas --topologies) wants the range.
func TestParseRangedTopology(t *testing.T) {
	d, err := ParseRangedTopology("1/2..8/1/2")
	require.NoError(t, err)
	assert.Equal(t, algorithms.Scaling{Min: 2, Max: 8}, *d.Tiers[1].Scaling)
	_, err = ParseRangedTopology("1/2/1/2")
	assert.EqualError(t, err, `ranged topology "1/2/1/2": want a topology with one tier's replicas as a range min..max, e.g. 1/2..8/1/2`)
	_, err = ParseRangedTopology("1/8..2/1/2")
	assert.EqualError(t, err, `ranged topology "1/8..2/1/2": range "8..2": the lower end 8 is above the upper end 2; want min..max, e.g. 2..8`)
}

// A topology is input (--topology, evaluate --replicas --topologies):
// whatever it is, a one-line refusal or a deployment with at most one
// range that writes back as it reads, its range's lower end the count.
func FuzzParseTopologyRange(f *testing.F) {
	for _, s := range []string{"1/2..8/1/2", "1/2..8/1/4", "1/2..8/1", "2..3/1/1/1", "1/2/1/2", "1/2..8/1..2/2", "1/8..2/1/2", "1/0..2/1/1",
		"1/ 2 .. 3 /1/1", "1/2..2/1/2", "1/2...8/1/2", "1/..8/1/2", "1/2../1/2", "1/2..1025/1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTopologyRange(s)
		rd, rerr := ParseRangedTopology(s)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			require.Error(t, rerr, "ParseRangedTopology took what ParseTopologyRange refused")
			fuzzcheck.RequireOneLine(t, rerr)
			return
		}
		vi := RangedTier(d)
		if vi < 0 {
			require.Error(t, rerr, "ParseRangedTopology took a topology without a range")
			fuzzcheck.RequireOneLine(t, rerr)
			plain, err := ParseTopology(s)
			require.NoError(t, err)
			require.Equal(t, plain, d)
			return
		}
		require.NoError(t, rerr)
		require.Equal(t, d, rd)
		sc := d.Tiers[vi].Scaling
		require.Less(t, sc.Min, sc.Max)
		require.Equal(t, sc.Min, d.Tiers[vi].Replicas)
		require.Equal(t, FormatTopology(d), d.Topology)
		again, err := ParseTopologyRange(FormatRangedTopology(d))
		require.NoError(t, err)
		require.Equal(t, d, again)
	})
}
