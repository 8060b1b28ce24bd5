package live

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every preset says what it reads and the exporter it needs: softalloc
// presets and docs/deployment.md print it, and a preset a user cannot learn
// without reading Go is a preset nobody picks.
func TestEveryPresetIsDescribed(t *testing.T) {
	require.NotEmpty(t, Presets)
	for _, name := range PresetNames() {
		about := Presets[name].About
		assert.NotEmpty(t, about.Reads, "preset %q: About.Reads (what it reads) is empty", name)
		assert.NotEmpty(t, about.Exporter, "preset %q: About.Exporter (the exporter it needs) is empty", name)
		assert.NotEmpty(t, Presets[name].List(), "preset %q has no query", name)
		for _, q := range Presets[name].List() {
			assert.NotEmpty(t, q.Unit, "preset %q: %s has no unit (presetdoc.go's queryUnit)", name, q.Key)
		}
	}
}

// Every placeholder a preset uses is the runner's or one its Exporter line
// tells the user to set in the servers entries.
func TestPresetsNameTheirServerPlaceholders(t *testing.T) {
	own := map[string]bool{}
	for _, p := range RunnerPlaceholders {
		own[p.Name] = true
	}
	for _, name := range PresetNames() {
		q := Presets[name]
		for _, p := range q.Placeholders() {
			if !own[p] {
				assert.Contains(t, q.About.Exporter+" "+q.About.Notes, "{"+p+"}",
					"preset %q uses {%s}, which its About does not tell the user to set", name, p)
			}
		}
	}
}

func TestPresetQueryListAndUnits(t *testing.T) {
	q := Queries{
		CPU: "c", Throughput: "t",
		Pools:     map[string]PoolQueries{"threads": {Busy: "b{instance}", FullShare: "f{window}"}},
		Resources: map[string]string{"disk": "d"},
	}
	got := q.List()
	keys := make([]string, len(got))
	for i, g := range got {
		keys[i] = g.Key
		assert.NotEmpty(t, g.Unit, g.Key)
	}
	assert.Equal(t, []string{"cpu", "throughput", "pools.threads.busy", "pools.threads.fullShare", "resources.disk"}, keys)
	assert.Equal(t, "seconds, mean residence per request", queryUnit("responseTime"))
	assert.Equal(t, []string{"instance", "window"}, q.Placeholders())
}
