package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/topology"
)

// Issue 40, item 5: windows left out of one tier's time per page are named
// with their reasons, in the JSON (all) and in the table (the first few).
func TestAdviseShowsTheWindowsLeftOutOfATier(t *testing.T) {
	d, err := topology.ParseTopology("1/1/1")
	require.NoError(t, err)
	doc := NewAdviseJSON(d, algorithms.Advice{}, "")
	b, err := json.Marshal(doc.Advice)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"tierGaps":[]`, "none: an empty list, not null")

	var gaps []algorithms.TierGap
	for i := range 7 {
		gaps = append(gaps, algorithms.TierGap{Tier: "app", Label: fmt.Sprintf("w%d", i), Problem: "app-1: response time 0 while its throughput is 12/s"})
	}
	doc = NewAdviseJSON(d, algorithms.Advice{Windows: 27, Used: 27, TierGaps: gaps}, "")
	assert.Len(t, doc.Advice.TierGaps, 7)
	var out bytes.Buffer
	require.NoError(t, WriteAdviseTable(&out, doc))
	assert.Contains(t, out.String(), "window w0 left out of tier app's time per page: app-1: response time 0 while its throughput is 12/s")
	assert.Contains(t, out.String(), "window w4 left out of tier app's time per page")
	assert.NotContains(t, out.String(), "window w5")
	assert.Contains(t, out.String(), "2 more windows left out of a tier's time per page (--output json lists them)")
}
