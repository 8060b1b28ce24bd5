package workload

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// FuzzParse feeds arbitrary workload files to Parse. A workload that parses
// must be safe for both walkers: every transition table stays in the chain
// with cumulative probabilities in [0, 1], think times are >= 0 and fit a
// time.Duration, counts fit the simulator's bytes, and every path renders.
// A bad one is refused on one line.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../testbed/workload.yaml", "../sim/rubbos-browse-only.yaml",
		"../sim/testdata/small-mix.yaml", "../sim/testdata/bad-mix-mix.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	base := "thinkTime: {mean: 1s}\nstart: A\ninteractions:\n"
	for _, s := range []string{
		base + "  - {name: A, path: '/s?id={rand:3:5}&q={pick:x|y}', embedded: [/i.gif], next: {A: 0.5, Back: 0.2, EndOfSession: 0.3}}\n",
		base + "  - {name: A, path: /a, next: {B: 0.7}}\n  - {name: B, path: /b, static: true, next: {Back: 2, A: 2}}\n",
		base + "  - {name: A, images: 2, queries: 1.5, next: {A: 1}}\n",
		"", "{}", "[1]", "name: 5", "interactions: 5", base, base + "  - {name: A, path: /a, imgs: 1}\n",
		"a: &a [*a, *a]\nname: *a", "x: 1\n---\ny: 2", `"a\nb": 1`,
		base + "  - {name: A, path: '/a?x={rand:5:1}'}\n", base + "  - {name: A, path: '/a?x={user}'}\n",
		base + "  - {name: A, path: '/a?x={rand:-9223372036854775808:9223372036854775807}'}\n",
		base + "  - {name: A, path: '/a?x={rand:0:9223372036854775807}'}\n",
		base + "  - {name: A, path: '/a?x={pick:}'}\n", base + "  - {name: A, path: \"/a{rand:1\\n:2}\"}\n",
		base + "  - {name: A, path: /a, next: {\"B\\nC\": 1}}\n", base + "  - {name: A, path: /a, next: {A: nan}}\n",
		base + "  - {name: \"A\\nB\", path: a}\n", base + "  - {name: A, path: /a, \"x\\ny\": 1}\n",
		base + "  - {name: A, images: 1, embedded: [/a, /b]}\n",
		"interactions: [{name: \"a\\nb\", next: {\"c\\nd\": 1}}]\nstart: \"a\\nb\"",
		"thinkTime: {mean: 1e300}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"thinkTime: {mean: -1s}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"thinkTime: {mean: .inf}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"thinkTime: {mean: inf, cap: 1m30s}\nstart: A\ninteractions: [{name: A}]\n",
		"sessionLength: -1\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"queriesPerServletPage: 1e308\nstart: A\ninteractions: [{name: A, queries: 5e-324}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse(data)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		n := len(w.Interactions)
		require.True(t, n >= 1 && n <= MaxInteractions)
		require.True(t, w.ThinkTime.Mean.IsTimeout() && w.ThinkTime.Cap.IsTimeout(), "think time %+v", w.ThinkTime)
		require.True(t, w.SessionLength >= 0 && w.SessionLength <= MaxSessionLength)
		require.False(t, fuzzcheck.HasNaN(*w), "a NaN in %+v", *w)
		require.True(t, w.StartIndex() >= 0 && w.StartIndex() < n)
		r := rand.New(rand.NewPCG(1, 2))
		var b strings.Builder
		for i := range w.Interactions {
			it, p := &w.Interactions[i], w.Page(i)
			require.True(t, it.ImageCount() >= 0 && it.ImageCount() <= MaxImages)
			require.Len(t, p.Embedded, len(it.Embedded))
			if p.Path != nil {
				require.True(t, strings.HasPrefix(p.Path.Render(r, &b), "/"), "interactions[%d]", i)
			}
			for _, e := range p.Embedded {
				require.True(t, strings.HasPrefix(e.Render(r, &b), "/"), "interactions[%d]", i)
			}
			require.Len(t, p.To, len(p.Cum))
			prev := 0.0
			for j, c := range p.Cum {
				require.GreaterOrEqual(t, c, prev, "interactions[%d]: cumulative probabilities", i)
				require.LessOrEqual(t, c, 1+1e-9, "interactions[%d]: cumulative probabilities", i)
				to := p.To[j]
				require.True(t, to == ToBack || to == ToEndOfSession || to >= 0 && int(to) < n, "interactions[%d]: target %d", i, to)
				prev = c
			}
		}
	})
}
