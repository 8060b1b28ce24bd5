package topology

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

func tier(name, role string, replicas int, pools ...string) algorithms.Tier {
	if len(pools) == 0 {
		pools = nil
	}
	return algorithms.Tier{Name: name, Role: role, Replicas: replicas, Cores: 1, Pools: pools}
}

func TestParseTopology(t *testing.T) {
	tests := []struct {
		in   string
		want algorithms.Deployment
	}{
		{"1/4/1/4", algorithms.Deployment{Topology: "1/4/1/4", Tiers: []algorithms.Tier{
			tier("web", algorithms.RoleWeb, 1, "threads"),
			tier("app", algorithms.RoleApp, 4, "threads", "connections"),
			tier("cluster", algorithms.RoleCluster, 1),
			tier("db", algorithms.RoleDB, 4),
		}}},
		{" 1/2/1\n", algorithms.Deployment{Topology: "1/2/1", Tiers: []algorithms.Tier{
			tier("web", algorithms.RoleWeb, 1, "threads"),
			tier("app", algorithms.RoleApp, 2, "threads", "connections"),
			tier("db", algorithms.RoleDB, 1),
		}}},
		{"01/2/1/1024", algorithms.Deployment{Topology: "1/2/1/1024", Tiers: []algorithms.Tier{
			tier("web", algorithms.RoleWeb, 1, "threads"),
			tier("app", algorithms.RoleApp, 2, "threads", "connections"),
			tier("cluster", algorithms.RoleCluster, 1),
			tier("db", algorithms.RoleDB, 1024),
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTopology(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want.Topology, FormatTopology(got))
		})
	}
}

func TestParseTopologyErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1/x/1/4", `topology "1/x/1/4": replica count "x" is not a positive integer`},
		{"1/2", `topology "1/2": want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1), got 2 numbers`},
		{"4", `topology "4": want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1), got 1 number`},
		{"1/2/1/2/1", `topology "1/2/1/2/1": want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1), got 5 numbers`},
		{"  ", `topology "  ": want #W/#A/#C/#D (e.g. 1/4/1/4) or #W/#A/#D (e.g. 1/2/1), got an empty string`},
		{"1/0/1/4", `topology "1/0/1/4": replica count "0" is not a positive integer`},
		{"1/-2/1", `topology "1/-2/1": replica count "-2" is not a positive integer`},
		{"1/+2/1", `topology "1/+2/1": replica count "+2" is not a positive integer`},
		{"1//1", `topology "1//1": replica count "" is not a positive integer`},
		{"1 / 2/1", `topology "1 / 2/1": replica count "1 " is not a positive integer`},
		{"1/2000/1/4", `topology "1/2000/1/4": replica count "2000" is more than the maximum of 1024`},
		{"1/99999999999999999999999/1", `topology "1/99999999999999999999999/1": replica count "99999999999999999999999" is more than the maximum of 1024`},
		{"1/٣/1", `topology "1/٣/1": replica count "٣" is not a positive integer`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseTopology(tt.in)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Zero(t, d)
			var te *Error
			require.True(t, errors.As(err, &te))
			assert.Equal(t, "topology", te.Kind)
		})
	}
}

func TestFormatTopologyOtherShapes(t *testing.T) {
	base, err := ParseTopology("1/2/1/2")
	require.NoError(t, err)
	edit := func(f func(*algorithms.Deployment)) algorithms.Deployment {
		d, err := ParseTopology("1/2/1/2")
		require.NoError(t, err)
		f(&d)
		return d
	}
	assert.Equal(t, "1/2/1/2", FormatTopology(base))
	for name, d := range map[string]algorithms.Deployment{
		"empty":        {},
		"two tiers":    {Tiers: base.Tiers[:2]},
		"renamed tier": edit(func(d *algorithms.Deployment) { d.Tiers[1].Name = "tomcat" }),
		"other role":   edit(func(d *algorithms.Deployment) { d.Tiers[2].Role = algorithms.RoleDB }),
		"two cores":    edit(func(d *algorithms.Deployment) { d.Tiers[0].Cores = 2 }),
		"no pools":     edit(func(d *algorithms.Deployment) { d.Tiers[1].Pools = nil }),
		"zero servers": edit(func(d *algorithms.Deployment) { d.Tiers[3].Replicas = 0 }),
		"too many":     edit(func(d *algorithms.Deployment) { d.Tiers[3].Replicas = MaxReplicas + 1 }),
	} {
		assert.Empty(t, FormatTopology(d), name)
	}
}

// Each parse returns its own pools, so editing one deployment leaves the
// next parse alone.
func TestParseTopologyIndependentPools(t *testing.T) {
	a, err := ParseTopology("1/2/1/2")
	require.NoError(t, err)
	a.Tiers[1].Pools[0] = "changed"
	b, err := ParseTopology("1/2/1/2")
	require.NoError(t, err)
	assert.Equal(t, []string{"threads", "connections"}, b.Tiers[1].Pools)
}
