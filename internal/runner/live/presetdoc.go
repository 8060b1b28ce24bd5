package live

import (
	"slices"
	"strings"
)

// PresetAbout describes a preset to the people who choose it: softalloc
// presets prints it and docs/deployment.md lists it, so that nobody learns a
// preset from its Go source or from an error message.
type PresetAbout struct {
	// Reads is what the preset observes, in a line ("the CPU utilisation of a
	// host, all its cores").
	Reads string
	// Exporter is what Prometheus must scrape for it, with the placeholders
	// each servers entry sets ("node_exporter on each server ({node}: its
	// instance)").
	Exporter string
	// Notes are what a user should know beyond the queries: caveats, how to
	// complete the preset. May be empty.
	Notes string
}

// PresetQuery is one query of a query set, with the unit it yields.
type PresetQuery struct {
	// Key is its path in a tier's queries: cpu, pools.threads.busy, resources.disk.
	Key string `json:"key"`
	// Query is the PromQL, placeholders unexpanded.
	Query string `json:"query"`
	// Unit is what the number means, the same for every preset: the runner
	// reads each key in one unit (cpu is a share of the server's cores, never
	// cores).
	Unit string `json:"unit"`
}

// Placeholder is a placeholder the runner sets itself in every tier query.
type Placeholder struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// RunnerPlaceholders are the placeholders the runner sets; any other is a
// key of the tier's servers entries ({instance}, {node}).
var RunnerPlaceholders = []Placeholder{
	{"window", "the runtime window as a PromQL duration, e.g. 300000ms"},
	{"windowSeconds", "the same window in seconds, e.g. 300, to turn a count over the window into a rate"},
	{"tier", "the tier's name"},
	{"server", "the server's name, the tier's name and its replica number: web-1"},
	{"cores", "the cores of one of the tier's servers (the tier's cores key)"},
}

// queryUnit is the unit the runner reads each key in (see Queries' fields);
// "" for a key it does not know, which TestEveryPresetIsDescribed catches.
func queryUnit(key string) string {
	switch key {
	case "cpu":
		return "share of the server's cores busy, 0-1"
	case "throttled":
		return "share of the CPU quota's periods throttled, 0-1"
	case "throughput":
		return "requests/s the server completed"
	case "responseTime":
		return "seconds, mean residence per request"
	case "gcShare":
		return "share of the window in stop-the-world GC pauses, 0-1"
	case "oomKills":
		return "processes the OOM killer killed, a counter read before and after each trial"
	case "memoryLimit":
		return "bytes, the server's memory limit"
	}
	switch {
	case strings.HasPrefix(key, "pools.") && strings.HasSuffix(key, ".busy"):
		return "busy units, mean over the window"
	case strings.HasPrefix(key, "pools.") && strings.HasSuffix(key, ".size"):
		return "units, the pool's size"
	case strings.HasPrefix(key, "pools.") && strings.HasSuffix(key, ".fullShare"):
		return "share of the window with every unit busy, 0-1"
	case strings.HasPrefix(key, "resources."):
		return "utilisation, 0-1"
	}
	return ""
}

// List lists q's queries with their units, in a runner section's order:
// cpu, throttled, throughput, responseTime, gcShare, then pools and
// resources by name.
func (q Queries) List() []PresetQuery {
	var out []PresetQuery
	q.each(func(field, query string) {
		out = append(out, PresetQuery{Key: field, Query: query, Unit: queryUnit(field)})
	})
	return out
}

// Placeholders are the distinct placeholders q's queries use, in the order
// they first appear.
func (q Queries) Placeholders() []string {
	var out []string
	q.each(func(_, query string) {
		for _, m := range placeholder.FindAllStringSubmatch(query, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	})
	return out
}
