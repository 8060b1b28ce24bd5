package discover

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Settings are what the user gave that the metrics cannot tell.
type Settings struct {
	Name     string   // the deployment's name
	Target   string   // the base URL the load goes to
	Health   string   // polled before each trial
	Workload string   // the workload file
	Hook     []string // applies an allocation
}

// quote is a YAML double-quoted scalar (JSON's escapes are YAML's).
func quote(s string) string { return strconv.Quote(s) }

// Render writes the proposal as a commented deployment file for the live
// runner. What the user must still decide is written as comments beginning
// "DECIDE:", and a missing target or workload as a value that the runner
// refuses, so that nothing runs on a guess.
func Render(p Proposal, s Settings) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Written by softalloc init from what %s scrapes.\n", p.Prometheus)
	w("# Check it with: softalloc doctor -f THIS_FILE\n")
	w("#\n# Found:\n")
	for _, t := range p.Targets {
		state := "up"
		if !t.Up {
			state = "DOWN"
		}
		kinds := strings.Join(t.Kinds, ", ")
		if kinds == "" {
			kinds = "nothing softalloc reads"
		}
		w("#   %-24s job %-16s %s: %s\n", t.Instance, t.Job, state, kinds)
	}
	for _, d := range p.Decide {
		w("# DECIDE: %s\n", d)
	}
	name := s.Name
	if name == "" {
		name = "my-stack"
	}
	w("name: %s\n", quote(name))
	w("# Tiers in the chain's order (requests flow from the first to the last).\n")
	w("tiers:\n")
	for _, t := range p.Tiers {
		w("  - name: %s  # %s\n", quote(t.Name), t.Software)
		w("    role: %s\n", t.Role)
		w("    replicas: %d\n", len(t.Servers))
		if t.Deploys != "" {
			w("    software: %s\n", t.Deploys)
		}
		if len(t.Pools) > 0 || t.MaxClientConn > 0 || t.ReservePoolSize > 0 {
			w("    pools: {%s}  # the sizes now, per server: the allocation a campaign starts from\n", pools(t))
		}
	}
	w("\nrunner:\n  name: live\n")
	if s.Target != "" {
		w("  target: %s\n", quote(s.Target))
	} else {
		w("  # DECIDE: the base URL the load goes to (the web tier's address), e.g. http://127.0.0.1:8080\n")
		w("  target: \"\"\n")
	}
	if s.Workload != "" {
		w("  workload: %s\n", quote(s.Workload))
	} else {
		w("  # DECIDE: the pages and think time of your users: softalloc workload --from-log access.log\n")
		w("  workload: \"\"\n")
	}
	w("  prometheus: %s\n", quote(p.Prometheus))
	if s.Health != "" {
		w("  health: %s\n", quote(s.Health))
	}
	if len(s.Hook) > 0 {
		args := make([]string, len(s.Hook))
		for i, a := range s.Hook {
			args[i] = quote(a)
		}
		w("  hook: [%s]\n", strings.Join(args, ", "))
	} else {
		w("  # DECIDE: a hook applies each allocation (placeholders such as %s); without\n", placeholders(p))
		w("  # one the pools stay as they are and a campaign only measures.\n")
		for _, t := range p.Tiers {
			if t.Software == "pgbouncer" && t.Pools["connections"] > 0 {
				w("  # PgBouncer's default_pool_size: examples/hooks/pgbouncer.sh --host HOST --port PORT %s\n", quote("{"+t.Name+".connections}"))
			}
		}
		w("  # hook: [./apply-pools.sh, %s]\n", placeholders(p))
	}
	w("  tiers:\n")
	for _, t := range p.Tiers {
		w("    %s:\n", quote(t.Name))
		for _, n := range t.Notes {
			w("      # %s\n", n)
		}
		w("      presets: [%s]\n", strings.Join(t.Presets, ", "))
		w("      servers:\n")
		for _, srv := range t.Servers {
			keys := make([]string, 0, len(srv))
			for k := range srv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var kv []string
			for _, k := range keys {
				kv = append(kv, fmt.Sprintf("%s: %s", k, quote(srv[k])))
			}
			w("        - {%s}\n", strings.Join(kv, ", "))
		}
		if len(t.Queries) > 0 {
			w("      queries:\n")
			keys := make([]string, 0, len(t.Queries))
			for k := range t.Queries {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				w("        %s: %s\n", k, quote(t.Queries[k]))
			}
		}
	}
	return []byte(b.String())
}

func pools(t Tier) string {
	names := make([]string, 0, len(t.Pools))
	for n := range t.Pools {
		names = append(names, n)
	}
	sort.Strings(names)
	sort.SliceStable(names, func(i, j int) bool { return names[i] == "threads" }) // threads first, as everywhere
	var out []string
	for _, n := range names {
		name := n
		if t.Role == "pooler" && n == "connections" {
			// A pooler's pools take PgBouncer's names in the file; the
			// hook's placeholder stays {tier.connections}.
			name = "default_pool_size"
		}
		out = append(out, fmt.Sprintf("%s: %d", name, t.Pools[n]))
	}
	if t.ReservePoolSize > 0 {
		out = append(out, fmt.Sprintf("reserve_pool_size: %d", t.ReservePoolSize))
	}
	if t.MaxClientConn > 0 {
		out = append(out, fmt.Sprintf("max_client_conn: %d", t.MaxClientConn))
	}
	return strings.Join(out, ", ")
}

// placeholders are the hook's arguments for the proposal's pools.
func placeholders(p Proposal) string {
	var out []string
	for _, t := range p.Tiers {
		names := make([]string, 0, len(t.Pools))
		for n := range t.Pools {
			names = append(names, n)
		}
		sort.Strings(names)
		sort.SliceStable(names, func(i, j int) bool { return names[i] == "threads" })
		for _, n := range names {
			out = append(out, quote("{"+t.Name+"."+n+"}"))
		}
	}
	return strings.Join(out, ", ")
}
