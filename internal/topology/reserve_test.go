package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/schematest"
)

// A pooler's reserve_pool_size, by PgBouncer's name, beside
// default_pool_size and max_client_conn: a setting the database's budget
// counts (Tier.ReservePoolSize), not a pool softalloc sizes; 0, PgBouncer's
// default, is none. The schema takes what the parser takes.
func TestPoolerReservePoolSize(t *testing.T) {
	s := schematest.Deployment(t)
	doc := func(pools string) []byte {
		return []byte("name: x\ntiers:\n  - {name: app, role: app, replicas: 2..4, pools: {threads: 10, connections: 5}}\n" +
			"  - {name: pgb, role: pooler, replicas: 1, software: pgbouncer, pools: {" + pools + "}}\n  - {name: db, role: db, replicas: 1}\n")
	}
	for pools, want := range map[string]int{
		"default_pool_size: 20, reserve_pool_size: 5, max_client_conn: 2000": 5,
		"reserve_pool_size: 0, default_pool_size: 20":                        0,
		"default_pool_size: 20":                                              0,
	} {
		df, err := ParseDeployment(doc(pools), "x.yaml")
		require.NoError(t, err, pools)
		pgb := df.Deployment.Tiers[1]
		assert.Equal(t, want, pgb.ReservePoolSize, pools)
		assert.Equal(t, 20, df.Allocation["pgb"].Connections, "default_pool_size is the pool: %s", pools)
		assert.NoError(t, schematest.Validate(t, s, doc(pools)), "the schema takes %s", pools)
	}
	for pools, want := range map[string]string{
		"default_pool_size: 20, reserve_pool_size: -1":                      `tiers[1] ("pgb"): pools: reserve_pool_size: want a count of connections, 0 or more, got -1`,
		"default_pool_size: 20, reserve_pool_size: 5, reserve_pool_size: 6": `tiers[1] ("pgb"): pools: reserve_pool_size given twice`,
		"default_pool_size: 20, reserve_pool_size: 100001":                  `tiers[1] ("pgb"): pools: reserve_pool_size: want at most 100000, got 100001`,
		"default_pool_size: 20, reserve_pool: 5":                            `tiers[1] ("pgb"): pools: a pooler's pools are default_pool_size (its server connections: what the database sees), reserve_pool_size (the server connections it adds when clients wait, which the database sees too) and max_client_conn (the client connections it admits), got "reserve_pool"`,
		"default_pool_size: 20, reserve_pool_size: five":                    `tiers[1] ("pgb"): pools: reserve_pool_size: want a count of connections, 0 or more, got "five"`,
	} {
		_, err := ParseDeployment(doc(pools), "x.yaml")
		require.Error(t, err, pools)
		assert.Equal(t, `deployment "x.yaml": `+want, err.Error(), pools)
		if pools != "default_pool_size: 20, reserve_pool_size: 5, reserve_pool_size: 6" { // a YAML mapping's duplicate key: JSON keeps one
			assert.Error(t, schematest.Validate(t, s, doc(pools)), "the schema refuses %s", pools)
		}
	}
}
