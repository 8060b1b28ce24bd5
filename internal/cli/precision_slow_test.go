//go:build !race

package cli_test

// TestSlowRefinementsFlag runs three whole 1/4/1/4 campaigns: in the second
// pass, without the race detector, under which it took 3m19s of a busy
// machine and the package ran past its 10-minute timeout.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --refinements bounds how often a saturation test within the noise is
// measured again. On 1/4/1/4 seed 2 a bisection probe's CPU interval holds
// 0.95 at 2% and at 1%: with one refinement it is taken as at the
// threshold, so minJobs is read a probe early, at fewer jobs; with the
// default it is decided.
func TestSlowRefinementsFlag(t *testing.T) {
	type rec struct {
		Allocation  string   `json:"allocation"`
		MinJobs     float64  `json:"minJobs"`
		Experiments int      `json:"experiments"`
		Warnings    []string `json:"warnings"`
	}
	recommend := func(args ...string) rec {
		stdout, stderr, code := run(t, "", append([]string{"recommend", "-t", "1/4/1/4", "--seed", "2", "--no-journal", "-q", "-o", "json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var r rec
		require.NoError(t, json.Unmarshal([]byte(stdout), &r))
		return r
	}
	def, once, never := recommend(), recommend("--refinements", "1"), recommend("--refinements", "0")
	t.Logf("default %+v\none %+v\nnever %+v", def, once, never)
	assert.Greater(t, def.Experiments, once.Experiments, "the default refines further")
	assert.Greater(t, once.Experiments, never.Experiments)
	assert.Greater(t, def.MinJobs, once.MinJobs, "a probe taken as at the threshold reads minJobs early")
	assert.Contains(t, strings.Join(once.Warnings, "\n"), "taken as at the threshold")
	assert.NotContains(t, strings.Join(def.Warnings, "\n"), "taken as at the threshold")

	for _, bad := range []string{"-1", "7"} {
		stdout, stderr, code := run(t, "", "find-critical", "-t", "1/2/1/2", "--no-journal", "--refinements", bad)
		assert.Equal(t, 2, code, bad)
		assert.Equal(t, "softalloc: --refinements "+bad+": want a number of trials in 0..6\n", stderr)
		assert.Empty(t, stdout)
	}
}
