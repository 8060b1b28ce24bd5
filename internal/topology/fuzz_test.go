package topology

import (
	"os"
	"path/filepath"
	"reflect"
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
		"{\"name\": \"j\", \"tiers\": [{\"name\": \"x\", \"role\": \"db\", \"replicas\": 2, \"pools\": {\"threads\": 3}}]}"} {
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
