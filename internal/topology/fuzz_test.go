package topology

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func FuzzParseTopology(f *testing.F) {
	for _, s := range []string{"1/4/1/4", "1/2/1/2", "1/2/1", " 01/2/1/1024 ", "1/x/1/4", "1/2", "1//1",
		"1/2000/1/4", "99999999999999999999/1/1", "-1/2/3", "+1/2/3", "", "/", "1/2/1/2/1", "١/2/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTopology(s)
		if err != nil {
			return
		}
		s1 := FormatTopology(d)
		if s1 == "" || s1 != d.Topology {
			t.Fatalf("ParseTopology(%q).Topology = %q, FormatTopology gives %q", s, d.Topology, s1)
		}
		d2, err := ParseTopology(s1)
		if err != nil {
			t.Fatalf("ParseTopology(%q) (formatted from %q): %v", s1, s, err)
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip of %q through %q: %+v != %+v", s, s1, d, d2)
		}
		if s2 := FormatTopology(d2); s2 != s1 {
			t.Fatalf("format of %q: %q, then %q", s, s1, s2)
		}
	})
}

func FuzzParseAllocation(f *testing.F) {
	for _, s := range []string{"400-150-60", "400-6-6", "\t1-1-100000\n", "0400-015-6", "400-x-60", "400-150",
		"400--150-60", "400-100001-60", "1.5-2-3", "", "--", "99999999999999999999-1-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAllocation(s)
		if err != nil {
			return
		}
		s1, err := FormatAllocation(a)
		if err != nil {
			t.Fatalf("FormatAllocation(ParseAllocation(%q)): %v", s, err)
		}
		a2, err := ParseAllocation(s1)
		if err != nil {
			t.Fatalf("ParseAllocation(%q) (formatted from %q): %v", s1, s, err)
		}
		if a.Key() != a2.Key() || len(a) != len(a2) {
			t.Fatalf("round trip of %q through %q: %v != %v", s, s1, a, a2)
		}
		if s2, err := FormatAllocation(a2); err != nil || s2 != s1 {
			t.Fatalf("format of %q: %q, then %q (%v)", s, s1, s2, err)
		}
		d, err := ParseTopology("1/2/1/2")
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateAllocation(d, a); err != nil {
			t.Fatalf("ValidateAllocation(1/2/1/2, %q): %v", s, err)
		}
	})
}

// FuzzParseDeployment checks only that no input panics, and that what parses
// is consistent: a valid default allocation and a topology string.
func FuzzParseDeployment(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(samples, "*.yaml"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{"", "tiers: [web]", "tiers: 5", "nmae: x", "[1]", "tiers: [{name: a, role: web, replicas: 1, bad: 2}]",
		"a: &a [*a]", "tiers: [{name: web, <<: &s {role: app, replicas: 3}}, {name: b, <<: *s}]\nname: n",
		"{\"name\": \"j\", \"tiers\": [{\"name\": \"x\", \"role\": \"db\", \"replicas\": 2, \"pools\": {\"threads\": 3}}]}",
		// A pooler with every one of PgBouncer's settings the file takes.
		"name: p\ntiers:\n  - {name: app, role: app, replicas: 2..4, pools: {connections: 5}}\n" +
			"  - {name: pgb, role: pooler, replicas: 1, pools: {default_pool_size: 20, reserve_pool_size: 5, max_client_conn: 100}}\n" +
			"  - {name: db, role: db, replicas: 1, connectionLimit: {max: 100, reserved: {admin: 3}}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		df, err := ParseDeployment(data, "fuzz.yaml")
		if err != nil {
			return
		}
		if df.Deployment.Topology == "" || len(df.Deployment.Tiers) == 0 {
			t.Fatalf("parsed with no topology or tiers: %+v", df)
		}
		if err := ValidateAllocation(df.Deployment, df.Allocation); err != nil {
			t.Fatalf("default allocation does not fit: %v", err)
		}
	})
}

// FuzzParseAllocationIn reads either form of an allocation against one of
// the test deployments (the byte chooses it): nothing panics, what parses
// fits the deployment, and its printed form reads back as itself.
func FuzzParseAllocationIn(f *testing.F) {
	ds := keyedDeployments(f)
	names := make([]string, 0, len(ds))
	for name := range ds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, s := range []string{"web.threads=150,php.children=20,db.connections=51", "web.threads=150,php.children=20",
		"web.threads=1,php.threads=2,db.connections=3", "lb.1.threads=10,app.v2.children=8,db.connections=30",
		"nginx.threads=200,api.threads=64,api.connections=16", "web.threads=400,app.threads=150,app.connections=60",
		"400-150-60", "a.b=1,a.b=1", ",", "=", ".=", "x.threads=99999999999999999999", " web . threads = 1 ", ""} {
		for i := range names {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		d := ds[names[int(which)%len(names)]]
		a, err := ParseAllocationIn(d, s)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("ParseAllocationIn(%s, %q): not a *Error: %v", d.Topology, s, err)
			}
			return
		}
		if err := ValidateAllocation(d, a); err != nil {
			t.Fatalf("ParseAllocationIn(%s, %q) does not fit: %v", d.Topology, s, err)
		}
		s1 := FormatAllocationIn(d, a)
		a2, err := ParseAllocationIn(d, s1)
		if err != nil {
			t.Fatalf("ParseAllocationIn(%s, %q) (printed from %q): %v", d.Topology, s1, s, err)
		}
		if !reflect.DeepEqual(a, a2) {
			t.Fatalf("round trip of %q through %q: %v != %v", s, s1, a, a2)
		}
		if s2 := FormatAllocationIn(d, a2); s2 != s1 {
			t.Fatalf("print of %q: %q, then %q", s, s1, s2)
		}
	})
}
