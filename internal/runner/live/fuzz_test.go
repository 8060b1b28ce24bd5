package live

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// FuzzParseWorkload feeds arbitrary workload files to ParseWorkload. A
// workload that parses must be safe for the load generator to run: every
// path renders, users walk the chain without leaving it, think times are
// not negative. A bad one is refused on one line.
func FuzzParseWorkload(f *testing.F) {
	if b, err := os.ReadFile("../../../testbed/workload.yaml"); err == nil {
		f.Add(b)
	}
	base := "thinkTime: {mean: 1s}\nstart: A\ninteractions:\n"
	for _, s := range []string{
		base + "  - {name: A, path: '/s?id={rand:3:5}&q={pick:x|y}', embedded: [/i.gif], next: {A: 0.5, Back: 0.2, EndOfSession: 0.3}}\n",
		base + "  - {name: A, path: /a, next: {B: 0.7}}\n  - {name: B, path: /b, static: true, next: {Back: 2, A: 2}}\n",
		"", "[1]", "interactions: 5", base, base + "  - {name: A, path: /a, imgs: 1}\n",
		base + "  - {name: A, path: '/a?x={rand:5:1}'}\n", base + "  - {name: A, path: '/a?x={user}'}\n",
		base + "  - {name: A, path: '/a?x={rand:-9223372036854775808:9223372036854775807}'}\n",
		base + "  - {name: A, path: '/a?x={rand:0:9223372036854775807}'}\n",
		base + "  - {name: A, path: '/a?x={pick:}'}\n", base + "  - {name: A, path: \"/a{rand:1\\n:2}\"}\n",
		base + "  - {name: A, path: /a, next: {\"B\\nC\": 1}}\n", base + "  - {name: A, path: /a, next: {A: nan}}\n",
		base + "  - {name: \"A\\nB\", path: a}\n", base + "  - {name: A, path: /a, \"x\\ny\": 1}\n",
		"thinkTime: {mean: 1e300}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"thinkTime: {mean: -1s}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"thinkTime: {mean: .inf}\nstart: A\ninteractions: [{name: A, path: /a}]\n",
		"sessionLength: -1\nstart: A\ninteractions: [{name: A, path: /a}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload(data)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.Len(t, w.states, len(w.Interactions))
		require.GreaterOrEqual(t, w.ThinkTime.Mean, duration.Seconds(0))
		require.GreaterOrEqual(t, w.ThinkTime.Cap, duration.Seconds(0))
		r := rand.New(rand.NewPCG(1, 2))
		var b strings.Builder
		for i, st := range w.states {
			p := st.path.render(r, &b)
			require.True(t, strings.HasPrefix(p, "/"), "interactions[%d] renders %q", i, p)
			for _, e := range st.embedded {
				e.render(r, &b)
			}
			prev := 0.0
			for j, c := range st.cum {
				require.GreaterOrEqual(t, c, prev, "interactions[%d]: cumulative probabilities", i)
				require.LessOrEqual(t, c, 1+1e-9, "interactions[%d]: cumulative probabilities", i)
				require.True(t, st.to[j] == toBack || st.to[j] == toEnd || st.to[j] >= 0 && st.to[j] < len(w.states))
				prev = c
			}
		}
		s := session{}
		w.begin(&s)
		for i := 0; i < 200; i++ {
			w.step(&s, r)
			require.True(t, s.state >= 0 && s.state < len(w.states), "state %d", s.state)
			require.LessOrEqual(t, len(s.hist), maxHistory)
			require.GreaterOrEqual(t, w.think(r, w.ThinkTime.Mean.Duration()), time.Duration(0))
		}
	})
}
