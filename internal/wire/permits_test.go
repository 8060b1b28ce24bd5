package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// A tier on virtual threads is another deployment: its permits survive the
// journal's key and the exec protocol, and a tier without them writes none.
func TestDeploymentKeepsPermits(t *testing.T) {
	d := algorithms.Deployment{Topology: "v", Tiers: []algorithms.Tier{
		{Name: "app", Role: "app", Replicas: 1, Cores: 1, Pools: []string{"threads", "connections"}, Software: "tomcat", Permits: true},
		{Name: "db", Role: "db", Replicas: 1, Cores: 1},
	}}
	b, err := json.Marshal(FromDeployment(d))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"permits":true`)
	assert.Equal(t, 1, countSubstr(string(b), "permits"))
	var back Deployment
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, d, back.Algorithms())
}

func countSubstr(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}
