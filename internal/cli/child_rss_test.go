package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/report"
	"github.com/softalloc/softalloc/internal/topology"
)

func TestParseMebibytes(t *testing.T) {
	for in, want := range map[string]float64{"48MiB": 48, "48M": 48, "48MB": 48, " 48 MiB ": 48, "43008KiB": 42, "43008k": 42,
		"1.5GiB": 1536, "1G": 1024, "1048576B": 1, "42": 42, "0.5": 0.5, "1e3": 1000} {
		got, err := parseMebibytes(in)
		require.NoError(t, err, in)
		assert.InDelta(t, want, got, 1e-9, in)
	}
	for _, in := range []string{"", "MiB", "0", "0MiB", "-48MiB", "48XB", "48 mebibytes", "NaN", "Inf", "1e300", "2000000GiB", "0x30M", "48MiB,"} {
		_, err := parseMebibytes(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), `such as 48MiB, 43008KiB or 1.5GiB (a bare number is MiB), got "`+in+`"`)
	}
}

// recommend --child-rss: the php-fpm pool file says the memory the
// recommended children need, as validate's memory rule reads it.
func TestRecommendChildRSSSizesThePoolFile(t *testing.T) {
	df, err := topology.LoadDeployment("../../testdata/deployments/php.yaml")
	require.NoError(t, err)
	d := df.Deployment
	sz, err := algorithms.CalculateMinAllocation(d, "php", 40, []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 30, ResponseTime: 0.3}, {Tier: "php", Throughput: 30, ResponseTime: 0.25},
		{Tier: "db", Throughput: 600, ResponseTime: 0.001}})
	require.NoError(t, err)
	_, recs := algorithms.RecommendAllocation(d, sz, algorithms.Allocation{"web": {Threads: 150}})

	o := &recommendOptions{childRSS: 48}
	fpm := o.snippets(d, recs, []string{report.FormatPHPFPM})
	require.Len(t, fpm, 1)
	assert.Contains(t, fpm[0].Text, "40 children x 48 MiB = 1920 MiB")
	none := (&recommendOptions{}).snippets(d, recs, []string{report.FormatPHPFPM})
	require.Len(t, none, 1)
	assert.NotContains(t, none[0].Text, "MiB =")

	// A deployment without children has no child to size: a usage error.
	d13, err := topology.ParseTopology("1/2/1/2")
	require.NoError(t, err)
	err = o.checkChildRSS(d13)
	var ue usageError
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.EqualError(t, err, `--child-rss 48MiB: deployment "1/2/1/2" has no tier of children (pools: {children: N}) whose memory it sizes`)
	assert.NoError(t, o.checkChildRSS(d))
}
