package live

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The testbed's workload walks RUBBoS's browse-only chain: its stationary
// page mix must be the one RUBBOS.md computed from the RUBBoS client.
func TestTestbedWorkloadMix(t *testing.T) {
	w, err := LoadWorkload("../../../testbed/workload.yaml")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[string]float64{}
	s := session{}
	w.begin(&s)
	const pages = 400_000
	for i := 0; i < pages; i++ {
		counts[w.Interactions[s.state].Name]++
		w.step(&s, r)
	}
	want := map[string]float64{"ViewComment": .279, "ViewStory": .267, "StoriesOfTheDay": .221,
		"SearchInStories": .038, "Search": .037, "Browse": .037, "BrowseStoriesInCategory": .036,
		"OlderStories": .034, "SearchInComments": .028, "BrowseCategories": .017, "SearchInUsers": .007}
	for name, share := range want {
		assert.InDelta(t, share, counts[name]/pages, 0.006, name)
	}
}

func TestParseWorkloadErrors(t *testing.T) {
	base := "thinkTime: {mean: 1s}\nstart: A\ninteractions:\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"no start", "thinkTime: {mean: 1s}\nstart: B\ninteractions:\n  - {name: A, path: /a}\n", `start: no interaction named "B"`},
		{"unknown target", base + "  - {name: A, path: /a, next: {C: 0.5}}\n", "next.C: no interaction"},
		{"relative path", base + "  - {name: A, path: a}\n", "want a path starting with /"},
		{"bad rand", base + "  - {name: A, path: '/a?x={rand:5:1}'}\n", "{rand:LO:HI}"},
		{"unknown placeholder", base + "  - {name: A, path: '/a?x={user}'}\n", "unknown placeholder"},
		{"unknown key", base + "  - {name: A, path: /a, imgs: 1}\n", `line 4: unknown field "imgs" in interactions[0]; want one of: name, path, embedded, static, queries, next`},
		{"empty", "# to do\n", "the file is empty; want a workload: thinkTime, start and interactions"},
		{"reserved name", base + "  - {name: Back, path: /a}\n", "want a name other than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPathTemplate(t *testing.T) {
	p, err := parsePath("/s?id={rand:3:5}&q={pick:x|y}&z={rand:0:0}")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		s := p.render(r, &b)
		assert.Regexp(t, `^/s\?id=[345]&q=[xy]&z=0$`, s)
		seen[s] = true
	}
	assert.Len(t, seen, 6, "every combination is drawn")
}

func TestThinkTimeCap(t *testing.T) {
	w := &Workload{ThinkTime: ThinkTime{Mean: 1, Cap: 2}}
	r := rand.New(rand.NewPCG(5, 6))
	zeros := 0
	for i := 0; i < 10000; i++ {
		d := w.think(r, 1e9)
		assert.LessOrEqual(t, int64(d), int64(2e9))
		if d == 0 {
			zeros++
		}
	}
	// P(X > 2 mean) = e^-2 = 13.5%: those draws become 0 (the TPC-W rule).
	assert.InDelta(t, 0.135, float64(zeros)/10000, 0.02)
}
