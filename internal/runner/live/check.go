package live

import (
	"fmt"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// CheckExperiment refuses, before the hook runs or any load starts, what the
// runner section says wrongly of e's deployment and allocation: a tier it
// does not know (a misspelt one, which left the real tier "missing"), a
// tier without a cpu query or with the wrong number of servers, a
// placeholder no server defines, a hardware query two tiers read alike
// (checkSharedHardware), a hook placeholder that names no pool of the
// allocation, or a hook that cannot run. Each was found after a whole trial of load, or never: a hook
// argument {web.thread} went to the hook as written, and the campaign
// measured allocations that were never applied.
func (r *Runner) CheckExperiment(e algorithms.Experiment) error {
	d := e.Deployment
	var names []string
	for _, t := range d.Tiers {
		names = append(names, t.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(r.cfg.Tiers)) {
		if !slices.Contains(names, name) {
			return fmt.Errorf("runner section: tiers.%s: no such tier in the deployment (its tiers: %s)", name, strings.Join(names, ", "))
		}
	}
	err := r.eachQuery(d, func(t algorithms.Tier, i int, vars map[string]string, field, query string) error {
		if _, err := expand(query, vars); err != nil {
			known := slices.Sorted(maps.Keys(vars))
			return fmt.Errorf("runner section: tiers.%s: %s of %s: %s has no value; the placeholders are {%s}",
				t.Name, field, t.ServerName(i), unknownPlaceholder(query, vars), strings.Join(known, "}, {"))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.checkSharedHardware(d); err != nil {
		return err
	}
	return r.checkHook(e.Allocation)
}

// checkSharedHardware refuses a hardware query (cpu, a resource) that
// servers of two tiers read alike, once expanded. Two tiers reading one CPU
// (a PgBouncer given its database host's CPU) read the same utilisation,
// and find-critical named the first tier of the chain, the pooler, where
// the database saturated: a wrong answer with only a "more than one tier
// saturated" warning. The paper's method sizes the tier that owns the
// critical resource, so each tier needs a source of its own. Servers of
// one tier may share a query (a tier-wide reading of a replicated tier).
func (r *Runner) checkSharedHardware(d algorithms.Deployment) error {
	type reader struct{ tier, server string }
	readBy := map[[2]string]reader{} // field and expanded query: the first server reading it
	return r.eachQuery(d, func(t algorithms.Tier, i int, vars map[string]string, field, query string) error {
		if field != "cpu" && !strings.HasPrefix(field, "resources.") {
			return nil
		}
		pq, err := expand(query, vars)
		if err != nil || len(metricNames(pq)) == 0 {
			return nil // CheckExperiment names a bad placeholder; a constant (vector(0)) reads no hardware
		}
		first, ok := readBy[[2]string{field, pq}]
		if !ok {
			readBy[[2]string{field, pq}] = reader{t.Name, t.ServerName(i)}
			return nil
		}
		if first.tier == t.Name {
			return nil
		}
		return fmt.Errorf("runner section: tiers.%s and tiers.%s: %s of %s and %s is one query (%s): softalloc cannot tell which tier saturates a resource two tiers share, "+
			"and would name the first of the chain; give each tier a source of its own: its own host (node), cgroup (cgroup, cadvisor) or processes (process-exporter)",
			first.tier, t.Name, field, first.server, t.ServerName(i), pq)
	})
}

// eachQuery calls f with every query of every server of d's tiers and
// its placeholders' values (a window of 1s), in the deployment's order,
// and stops at the first error.
func (r *Runner) eachQuery(d algorithms.Deployment, f func(t algorithms.Tier, i int, vars map[string]string, field, query string) error) error {
	for _, t := range d.Tiers {
		tc, q, err := r.tier(t)
		if err != nil {
			return err
		}
		for i := 0; i < t.Replicas; i++ {
			vars := serverVars(t, i, tc, "1s")
			var bad error
			q.each(func(field, query string) {
				if bad == nil {
					bad = f(t, i, vars, field, query)
				}
			})
			if bad != nil {
				return bad
			}
		}
	}
	return nil
}

// CheckSizing refuses, before the hook runs or any load starts, a tier whose
// throughput or response time the runner section does not read, for a
// command (recommend, validate) that sizes pools from them: minJobs is the
// critical tier's throughput x response time and each tier in front of it
// is sized by its own (Little's law, the forced flow law). Which tier is
// critical is known only after the trials, so every tier needs both; a
// missing one failed the sizing after every trial had run (tier "db":
// responseTime: want a finite number > 0, got 0). find-critical reads the
// CPUs alone (CheckExperiment).
func (r *Runner) CheckSizing(e algorithms.Experiment, command string) error {
	for _, t := range e.Deployment.Tiers {
		tc, q, err := r.tier(t)
		if err != nil {
			return err
		}
		for _, need := range []struct{ field, query string }{{"throughput", q.Throughput}, {"responseTime", q.ResponseTime}} {
			if need.query != "" {
				continue
			}
			from := "nothing reads (the tier has no presets)"
			if len(tc.Presets) > 0 {
				from = fmt.Sprintf("its presets (%s) do not read", strings.Join(tc.Presets, ", "))
			}
			var give []string
			for _, p := range PresetNames() {
				if (need.field == "throughput" && Presets[p].Throughput != "") || (need.field == "responseTime" && Presets[p].ResponseTime != "") {
					give = append(give, p)
				}
			}
			hint := ""
			if t.Role == algorithms.RoleDB && need.field == "responseTime" {
				// No database preset reads a latency: mysqld_exporter has none
				// without performance_schema.
				hint = "; for a database, its app's view of its queries as testbed/deployment.yaml reads them, or with mysqld_exporter's " +
					"--collect.perf_schema.eventsstatements MySQL's performance_schema: " +
					"sum(rate(mysql_perf_schema_events_statements_seconds_total{instance=\"{instance}\"}[{window}])) / " +
					"sum(rate(mysql_perf_schema_events_statements_total{instance=\"{instance}\"}[{window}]))"
			}
			return fmt.Errorf("runner section: tiers.%s: %s needs its %s, which %s: set queries.%s (presets that read it: %s%s); "+
				"every tier's throughput x response time sizes its pools, and which tier is critical is known only after the trials",
				t.Name, command, need.field, from, need.field, strings.Join(give, ", "), hint)
		}
	}
	return nil
}

// checkHook refuses what hookArgv would refuse of e's allocation (a
// placeholder naming no pool it sets), and a hook program that is not
// there to run.
func (r *Runner) checkHook(a algorithms.Allocation) error {
	if len(r.cfg.Hook) == 0 {
		return nil
	}
	if _, err := hookArgv(r.cfg.Hook, a); err != nil {
		return fmt.Errorf("runner section: hook: %w", err)
	}
	prog := r.cfg.Hook[0]
	if prog == "" {
		return fmt.Errorf("runner section: hook[0]: empty; want the program that applies an allocation")
	}
	// As exec.Command finds it: a name with a slash is a path (here
	// relative to the deployment file's directory), else one on $PATH.
	if !strings.Contains(prog, "/") {
		if _, err := osexec.LookPath(prog); err != nil {
			return fmt.Errorf("runner section: hook[0]: %q is not a program on $PATH", prog)
		}
		return nil
	}
	p := prog
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.cfg.dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("runner section: hook[0]: %w", err)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("runner section: hook[0]: %s is not an executable file", p)
	}
	return nil
}

// unknownPlaceholder is the first placeholder of q that vars lacks.
func unknownPlaceholder(q string, vars map[string]string) string {
	for _, m := range placeholder.FindAllStringSubmatch(q, -1) {
		if _, ok := vars[m[1]]; !ok {
			return m[0]
		}
	}
	return ""
}

// each calls f with every query set, by its field path.
func (q Queries) each(f func(field, query string)) {
	for _, x := range []struct{ field, query string }{
		{"cpu", q.CPU}, {"throttled", q.Throttled}, {"throughput", q.Throughput}, {"responseTime", q.ResponseTime}, {"gcShare", q.GCShare},
		{"oomKills", q.OOMKills}, {"memoryLimit", q.MemoryLimit},
	} {
		if x.query != "" {
			f(x.field, x.query)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(q.Pools)) {
		p := q.Pools[name]
		for _, x := range []struct{ field, query string }{{"busy", p.Busy}, {"size", p.Size}, {"fullShare", p.FullShare}} {
			if x.query != "" {
				f("pools."+name+"."+x.field, x.query)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(q.Resources)) {
		f("resources."+name, q.Resources[name])
	}
}
