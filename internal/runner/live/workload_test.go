package live

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/workload"
)

// The testbed's workload walks RUBBoS's browse-only chain: its stationary
// page mix must be the one RUBBOS.md computed from the RUBBoS client.
func TestTestbedWorkloadMix(t *testing.T) {
	b, err := os.ReadFile("../../../testbed/workload.yaml")
	require.NoError(t, err)
	w, err := ParseWorkload(b)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[string]float64{}
	s := session{}
	begin(w, &s)
	const pages = 400_000
	for i := 0; i < pages; i++ {
		counts[w.Interactions[s.state].Name]++
		step(w, &s, r)
		require.LessOrEqual(t, len(s.hist), maxHistory)
	}
	want := map[string]float64{"ViewComment": .279, "ViewStory": .267, "StoriesOfTheDay": .221,
		"SearchInStories": .038, "Search": .037, "Browse": .037, "BrowseStoriesInCategory": .036,
		"OlderStories": .034, "SearchInComments": .028, "BrowseCategories": .017, "SearchInUsers": .007}
	for name, share := range want {
		assert.InDelta(t, share, counts[name]/pages, 0.006, name)
	}
}

// ParseWorkload is internal/workload's parser (whose own tests cover the
// format) plus what the load generator needs: a path for every page and
// embedded requests as paths.
func TestParseWorkloadErrors(t *testing.T) {
	base := "thinkTime: {mean: 1s}\nstart: A\ninteractions:\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"no start", "thinkTime: {mean: 1s}\nstart: B\ninteractions:\n  - {name: A, path: /a}\n", `start: no interaction named "B"`},
		{"unknown target", base + "  - {name: A, path: /a, next: {C: 0.5}}\n", "next.C: no interaction"},
		{"relative path", base + "  - {name: A, path: a}\n", "want a path starting with /"},
		{"bad rand", base + "  - {name: A, path: '/a?x={rand:5:1}'}\n", "{rand:LO:HI}"},
		{"unknown placeholder", base + "  - {name: A, path: '/a?x={user}'}\n", "unknown placeholder"},
		{"unknown key", base + "  - {name: A, path: /a, imgs: 1}\n", `line 4: unknown field "imgs" in interactions[0]; want one of: name, path, embedded, static, images, queries, next`},
		{"empty", "# to do\n", "the file is empty; want a workload: thinkTime, start and interactions"},
		{"reserved name", base + "  - {name: Back, path: /a}\n", "want a name other than"},
		{"no path", base + "  - {name: A, queries: 2}\n", `interactions[0] (A).path: want a path starting with /, got ""`},
		{"images as a count", base + "  - {name: A, path: /a, images: 1}\n", "interactions[0] (A).images: 1, but the load generator fetches embedded paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestThinkTimeCap(t *testing.T) {
	w := &workload.Workload{ThinkTime: workload.ThinkTime{Mean: 1, Cap: 2}}
	r := rand.New(rand.NewPCG(5, 6))
	zeros := 0
	for i := 0; i < 10000; i++ {
		d := think(w, r, 1e9)
		assert.LessOrEqual(t, int64(d), int64(2e9))
		if d == 0 {
			zeros++
		}
	}
	// P(X > 2 mean) = e^-2 = 13.5%: those draws become 0 (the TPC-W rule).
	assert.InDelta(t, 0.135, float64(zeros)/10000, 0.02)
}
