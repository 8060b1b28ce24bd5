package workload

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Both the live runner's testbed workload and the simulator's embedded mix
// are workload files.
func TestParsesBothSidesFiles(t *testing.T) {
	w, err := Load("../../testbed/workload.yaml")
	require.NoError(t, err)
	assert.Equal(t, "StoriesOfTheDay", w.Interactions[w.StartIndex()].Name)
	require.NotNil(t, w.Page(0).Path)
	assert.Equal(t, 1, w.Interactions[0].ImageCount(), "the logo, as an embedded path")

	m, err := Load("../sim/rubbos-browse-only.yaml")
	require.NoError(t, err)
	assert.Nil(t, m.Page(0).Path, "a mix for the simulator has no paths")
	assert.Equal(t, 1, m.Interactions[0].ImageCount(), "the logo, as a count")
	assert.Equal(t, 3.22, m.QueriesPerServletPage)
}

func TestCompiledTransitions(t *testing.T) {
	w, err := Parse([]byte("thinkTime: {mean: 1s}\nstart: B\ninteractions:\n" +
		"  - {name: A, next: {B: 0.5, Back: 0.25, EndOfSession: 0.25}}\n" +
		"  - {name: B, next: {A: 2, B: 2}}\n  - {name: C}\n"))
	require.NoError(t, err)
	assert.Equal(t, 1, w.StartIndex())
	assert.Equal(t, []float64{0.5, 0.75, 1}, w.Page(0).Cum)
	assert.Equal(t, []int16{1, ToBack, ToEndOfSession}, w.Page(0).To)
	assert.Equal(t, []float64{0.5, 1}, w.Page(1).Cum, "a sum over 1 is normalised")
	assert.Empty(t, w.Page(2).Cum, "no transitions: the user stays")
}

// Each message names the field, the bad value and what is wanted; where the
// two old parsers differed, the stronger check holds for both sides.
func TestParseErrors(t *testing.T) {
	base := "thinkTime: {mean: 1s}\nstart: A\ninteractions:\n"
	one := func(s string) string { return base + "  - {name: A, " + s + "}\n" }
	many := base
	for i := range MaxInteractions + 1 {
		many += "  - {name: P" + strings.Repeat("x", i) + "}\n"
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "# to do\n", "the file is empty; want a workload: thinkTime, start and interactions"},
		{"no interactions", "thinkTime: {mean: 1s}\nstart: A\n", "interactions: want at least one"},
		{"too many interactions", many, "interactions: want at most 250, got 251"},
		{"no start", "thinkTime: {mean: 1s}\nstart: B\ninteractions:\n  - {name: A}\n", `start: no interaction named "B"`},
		{"unknown target", one("next: {C: 0.5}"), "interactions[0] (A).next.C: no interaction of that name"},
		{"NaN probability", one("next: {A: nan}"), `want a probability >= 0, got "nan"`},
		{"negative think", "thinkTime: {mean: -1s}\nstart: A\ninteractions: [{name: A}]\n", "thinkTime: want a mean and a cap >= 0 and under 292 years, got -1 and 0 seconds"},
		{"infinite think", "thinkTime: {mean: inf}\nstart: A\ninteractions: [{name: A}]\n", "got +Inf and 0 seconds"},
		{"infinite cap", "thinkTime: {mean: 1s, cap: .inf}\nstart: A\ninteractions: [{name: A}]\n", "got 1 and +Inf seconds"},
		{"think beyond a time.Duration", "thinkTime: {mean: 1e300}\nstart: A\ninteractions: [{name: A}]\n", "got 1e+300 and 0 seconds"},
		{"NaN think", "thinkTime: {mean: nan}\nstart: A\ninteractions: [{name: A}]\n", `want a duration like 2.5ms or 7s, got "nan"`},
		{"session length", "sessionLength: 70000\nthinkTime: {mean: 1s}\nstart: A\ninteractions: [{name: A}]\n", "sessionLength: want an integer in [0,65535], got 70000"},
		{"infinite queries per page", "queriesPerServletPage: .inf\nthinkTime: {mean: 1s}\nstart: A\ninteractions: [{name: A}]\n", "queriesPerServletPage: want a finite number >= 0, got +Inf"},
		{"images", one("images: 256"), "interactions[0] (A).images: want an integer in [0,255], got 256"},
		{"images and embedded disagree", one("images: 2, embedded: [/a.gif]"), "interactions[0] (A).images: 2, but embedded lists 1 paths"},
		{"queries", one("queries: -1"), "interactions[0] (A).queries: want a number >= 0, got -1"},
		{"relative path", one("path: a"), `interactions[0] (A).path: want a path starting with /, got "a"`},
		{"relative embedded", one("path: /a, embedded: [b.gif]"), `interactions[0] (A).embedded[0]: want a path starting with /, got "b.gif"`},
		{"bad rand", one("path: '/a?x={rand:5:1}'"), "{rand:LO:HI}"},
		{"unknown placeholder", one("path: '/a?x={user}'"), "unknown placeholder"},
		{"unknown key", one("imgs: 1"), `line 4: unknown field "imgs" in interactions[0]; want one of: name, path, embedded, static, images, queries, next`},
		{"reserved name", base + "  - {name: Back}\n", "want a name other than"},
		{"twice", base + "  - {name: A}\n  - {name: A}\n", `interactions[1].name: "A" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTemplate(t *testing.T) {
	p, err := ParseTemplate("/s?id={rand:3:5}&q={pick:x|y}&z={rand:0:0}")
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		s := p.Render(r, &b)
		assert.Regexp(t, `^/s\?id=[345]&q=[xy]&z=0$`, s)
		seen[s] = true
	}
	assert.Len(t, seen, 6, "every combination is drawn")
}

// A workload written back as YAML (testbed/twin writes one for the
// simulator) reads the same.
func TestMarshalReadsBack(t *testing.T) {
	w, err := Load("../../testbed/workload.yaml")
	require.NoError(t, err)
	b, err := yaml.Marshal(w)
	require.NoError(t, err)
	back, err := Parse(b)
	require.NoError(t, err, "%s", b)
	assert.Equal(t, w.Interactions, back.Interactions)
	assert.Equal(t, w.ThinkTime, back.ThinkTime)
	assert.Equal(t, w.pages, back.pages)
}
