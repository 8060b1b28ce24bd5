package topology

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/schematest"
)

func TestReplicaRangesInTheDeploymentFile(t *testing.T) {
	df, err := LoadDeployment(filepath.Join(samples, "autoscaled.yaml"))
	require.NoError(t, err)
	app := df.Deployment.Tiers[1]
	assert.Equal(t, 2, app.Replicas, "experiments run at the range's lower end")
	assert.Equal(t, &algorithms.Scaling{Min: 2, Max: 12, Surge: algorithms.Surge{Percent: 25}}, app.Scaling)
	assert.Equal(t, "2..12", FormatReplicas(app))
	assert.Equal(t, &algorithms.ConnectionLimit{Max: 500, Reserved: []algorithms.Reservation{
		{Name: "admin", Connections: 3}, {Name: "monitoring", Connections: 5}, {Name: "reports-service", Connections: 40}}},
		df.Deployment.Tiers[2].ConnectionLimit, "reserved in the file's order")
	assert.Nil(t, df.Deployment.Tiers[0].Scaling)
	assert.Equal(t, "1", FormatReplicas(df.Deployment.Tiers[0]))

	df, err = LoadDeployment(filepath.Join(samples, "pooled.yaml"))
	require.NoError(t, err)
	pgb := df.Deployment.Tiers[1]
	assert.Equal(t, algorithms.RolePooler, pgb.Role)
	assert.Equal(t, []string{algorithms.PoolConnections}, pgb.Pools, "default_pool_size is the pooler's connections")
	assert.Equal(t, 6000, pgb.MaxClientConn)
	assert.Equal(t, algorithms.TierPools{Connections: 40}, df.Allocation["pgbouncer"])
	assert.NoError(t, ValidateAllocation(df.Deployment, df.Allocation))

	for in, want := range map[string]*algorithms.Scaling{
		"replicas: 4, surge: 1":       {Min: 4, Max: 4, Surge: algorithms.Surge{Count: 1}},
		"replicas: 4, surge: 0%":      {Min: 4, Max: 4},
		"replicas: '3'":               nil,
		"replicas: ' 2 .. 03 '":       {Min: 2, Max: 3},
		"replicas: 1..1024":           {Min: 1, Max: 1024},
		"replicas: 5..5, surge: 100%": {Min: 5, Max: 5, Surge: algorithms.Surge{Percent: 100}},
	} {
		df, err := ParseDeployment([]byte("name: x\ntiers: [{name: app, role: app, "+in+"}]\n"), "x.yaml")
		require.NoError(t, err, in)
		assert.Equal(t, want, df.Deployment.Tiers[0].Scaling, in)
	}
	df, err = ParseDeployment([]byte("name: x\ntiers: [{name: db, role: db, replicas: 1, connectionLimit: 100}]\n"), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, &algorithms.ConnectionLimit{Max: 100, Reserved: []algorithms.Reservation{}}, df.Deployment.Tiers[0].ConnectionLimit)
}

// A fixed deployment reads as before: no Scaling, no limit, the notation.
func TestFixedReplicasReadAsBefore(t *testing.T) {
	df, err := ParseDeployment([]byte("tiers:\n  - {name: web, role: web, replicas: 1, pools: {threads: 400}}\n"+
		"  - {name: app, role: app, replicas: 2, pools: {threads: 150, connections: 60}}\n  - {name: db, role: db, replicas: 1}\n"), "x.yaml")
	require.NoError(t, err)
	d, err := ParseTopology("1/2/1")
	require.NoError(t, err)
	assert.Equal(t, d, df.Deployment)
}

func TestReplicaRangeErrors(t *testing.T) {
	web := "{name: web, role: web, replicas: 1}"
	db := "{name: db, role: db, replicas: 1}"
	tests := []struct {
		name, tiers, want string
		schemaToo         bool // the schema can say it too
	}{
		{"reversed range", "{name: app, role: app, replicas: 2..1}",
			`tiers[0] ("app"): replicas: range "2..1": the lower end 2 is above the upper end 1; want min..max, e.g. 1..2`, false},
		{"zero in range", "{name: app, role: app, replicas: 0..3}",
			`tiers[0] ("app"): replicas: range "0..3": lower end 0 is not a positive integer (want at least 1 replica)`, true},
		{"range too large", "{name: app, role: app, replicas: 2..5000}",
			`tiers[0] ("app"): replicas: range "2..5000": upper end 5000 is more than the maximum of 1024 (want at least 1 replica)`, false},
		{"not a range", "{name: app, role: app, replicas: 2-12}",
			`tiers[0] ("app"): replicas: want a positive integer or a range min..max (e.g. 2..12), got "2-12"`, true},
		{"surge above 100%", "{name: app, role: app, replicas: 2..12, surge: 150%}",
			`tiers[0] ("app"): surge: want a count of pods (e.g. 2) or a percentage of the replicas up to 100% (e.g. 25%), as Kubernetes' maxSurge, got "150%": softalloc takes at most 100% (every replica doubled during a rollout)`, true},
		{"negative surge", "{name: app, role: app, replicas: 2, surge: -1}",
			`tiers[0] ("app"): surge: want a count of pods (e.g. 2) or a percentage of the replicas up to 100% (e.g. 25%), as Kubernetes' maxSurge, got "-1"`, true},
		{"surge a list", "{name: app, role: app, replicas: 2, surge: [1]}",
			`tiers[0] ("app"): surge: want a count of pods (e.g. 2) or a percentage of the replicas up to 100% (e.g. 25%), as Kubernetes' maxSurge, got a list`, true},
		{"two ranges", "{name: web, role: web, replicas: 1..2}, {name: app, role: app, replicas: 2..12}",
			`tiers[1] ("app"): replicas: tiers[0] ("web") has a range already (1..2); softalloc answers for one autoscaled tier at a time: give the others a count`, false},
		{"reserved above max", web + ", {name: db, role: db, replicas: 1, connectionLimit: {max: 500, reserved: {admin: 3, monitoring: 5, reports-service: 540}}}",
			`tiers[1] ("db"): connectionLimit: reserved adds up to 548 (admin 3, monitoring 5, reports-service 540), which leaves nothing of max 500 for the deployment's pools`, false},
		{"limit on the app", "{name: app, role: app, replicas: 1, connectionLimit: 100}, " + db,
			`tiers[0] ("app"): connectionLimit: the database's limit belongs on its tier (role db), not on a tier of role app`, true},
		{"limit without max", "{name: db, role: db, replicas: 1, connectionLimit: {reserved: {admin: 3}}}",
			`tiers[0] ("db"): connectionLimit: max: missing; want the database's max_connections`, true},
		{"limit misspelt", "{name: db, role: db, replicas: 1, connectionLimit: {max: 100, reserve: {admin: 3}}}",
			`tiers[0] ("db"): connectionLimit: unknown key "reserve"; want max or reserved`, true},
		{"reserved zero", "{name: db, role: db, replicas: 1, connectionLimit: {max: 100, reserved: {admin: 0}}}",
			`tiers[0] ("db"): connectionLimit: reserved: admin: want a positive integer, got 0`, true},
		{"reserved a list", "{name: db, role: db, replicas: 1, connectionLimit: {max: 100, reserved: [admin]}}",
			`tiers[0] ("db"): connectionLimit: reserved: want a mapping of names to connections (e.g. {admin: 3, reports-service: 40}), got a list`, true},
		{"limit zero", "{name: db, role: db, replicas: 1, connectionLimit: 0}",
			`tiers[0] ("db"): connectionLimit: want max_connections as a number (e.g. 500), or a mapping {max: 500, reserved: {admin: 3, monitoring: 5}}: want a positive integer, got 0`, true},
		{"pooler last", web + ", {name: pgb, role: pooler, replicas: 1}",
			`tiers[1] ("pgb"): role: a pooler stands in front of a database, and "pgb" is the last tier`, false},
		{"pooler before the app", "{name: pgb, role: pooler, replicas: 1}, {name: app, role: app, replicas: 1}, " + db,
			`tiers[0] ("pgb"): role: a pooler stands in front of a database, and the next tier "app" is of role app; want db`, false},
		{"pooler with threads", "{name: pgb, role: pooler, replicas: 1, pools: {threads: 5}}, " + db,
			`tiers[0] ("pgb"): pools: a pooler's pools are default_pool_size (its server connections: what the database sees), reserve_pool_size (the server connections it adds when clients wait, which the database sees too) and max_client_conn (the client connections it admits), got "threads"`, true},
		{"pooler pool zero", "{name: pgb, role: pooler, replicas: 1, pools: {max_client_conn: 0}}, " + db,
			`tiers[0] ("pgb"): pools: max_client_conn: want a positive integer, got 0`, true},
		{"pgbouncer names elsewhere", "{name: app, role: app, replicas: 1, pools: {default_pool_size: 5}}, " + db,
			`tiers[0] ("app"): pools: unknown pool "default_pool_size"; want threads, connections, children or permits`, true},
	}
	s := schematest.Deployment(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "name: x\ntiers: [" + tt.tiers + "]\n"
			df, err := ParseDeployment([]byte(doc), "x.yaml")
			require.Error(t, err)
			assert.Equal(t, `deployment "x.yaml": `+tt.want, err.Error())
			assert.Zero(t, df)
			var te *Error
			require.True(t, errors.As(err, &te))
			if tt.schemaToo {
				assert.Error(t, schematest.Validate(t, s, []byte(doc)), "the schema takes it")
			}
		})
	}
}

// The samples are valid for the schema as for the parser.
func TestReplicaSamplesMatchTheSchema(t *testing.T) {
	s := schematest.Deployment(t)
	for _, f := range []string{"autoscaled.yaml", "pooled.yaml"} {
		b, err := os.ReadFile(filepath.Join(samples, f))
		require.NoError(t, err)
		assert.NoError(t, schematest.Validate(t, s, b), f)
	}
}

// FuzzParseReplicas: a count or a range reads back as itself, and what is
// refused is refused with a message, never a panic.
func FuzzParseReplicas(f *testing.F) {
	for _, s := range []string{"4", "2..12", " 2 .. 12 ", "2..1", "0..3", "1..1024", "1..1025", "..", "2...3", "-1..2", "١..2", "99999999999999999999..1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, sc, err := ParseReplicas(s)
		if err != nil {
			return
		}
		if n < 1 || n > MaxReplicas || (sc != nil && (sc.Min != n || sc.Max < sc.Min || sc.Max > MaxReplicas)) {
			t.Fatalf("ParseReplicas(%q) = %d, %+v", s, n, sc)
		}
		tier := algorithms.Tier{Replicas: n, Scaling: sc}
		n2, sc2, err := ParseReplicas(FormatReplicas(tier))
		if err != nil || n2 != n || (sc != nil && sc.Min < sc.Max && *sc2 != *sc) {
			t.Fatalf("round trip of %q through %q: %d %+v %v", s, FormatReplicas(tier), n2, sc2, err)
		}
	})
}

func FuzzParseSurge(f *testing.F) {
	for _, s := range []string{"25%", "0", "2", "100%", "101%", "150%", "-1", "%", " 5 % ", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sg, err := ParseSurge(s)
		if err != nil {
			return
		}
		if sg.Percent > 100 || sg.Percent < 0 || sg.Count < 0 || (sg.Percent > 0 && sg.Count > 0) {
			t.Fatalf("ParseSurge(%q) = %+v", s, sg)
		}
		if sg2, err := ParseSurge(sg.String()); err != nil || sg2 != sg {
			t.Fatalf("round trip of %q through %q: %+v %v", s, sg.String(), sg2, err)
		}
	})
}
