package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/softalloc/softalloc/algorithms"
)

// Every command that prints a table also prints CSV (--output csv): one
// header row of snake_case names, then one row per line of the table, with
// numbers in full precision and empty cells for what does not apply.

func writeCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// optRatio is a front tier's ratio, empty for the critical tier and those
// behind it, which have none (the table's "-", absent from the JSON).
func optRatio(v float64) string {
	if v == 0 {
		return ""
	}
	return num(v)
}

func optInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// WriteCriticalCSV is find-critical's answer as one row.
func WriteCriticalCSV(w io.Writer, topology string, c algorithms.Critical, reserve string) error {
	f := TrialFailures(c.Trials)
	return writeCSV(w, []string{"topology", "tier", "server", "resource", "utilization", "saturation_workload", "max_throughput", "reserve", "experiments",
		"errors", "error_share"},
		[][]string{{topology, c.Tier, c.Server, c.Resource, num(c.Utilization), strconv.Itoa(c.SaturationWorkload), num(c.MaxThroughput),
			reserve, strconv.Itoa(c.Experiments), strconv.FormatInt(f.Errors, 10), num(f.ErrorShare)}})
}

// WriteRecommendCSV is recommend's tiers, a row each.
func WriteRecommendCSV(w io.Writer, r RecommendJSON) error {
	var rows [][]string
	for _, t := range r.Tiers {
		minT, minC := "", ""
		if t.Minimum != nil {
			minT, minC = strconv.Itoa(t.Minimum.ThreadsPerServer), optInt(t.Minimum.ConnectionsPerServer)
		}
		rows = append(rows, []string{r.Topology, t.Name, strconv.Itoa(t.Replicas), strconv.Itoa(t.ThreadsPerServer), optInt(t.ConnectionsPerServer),
			strconv.Itoa(t.TotalThreads), optInt(t.TotalConnections), minT, minC})
	}
	return writeCSV(w, []string{"topology", "tier", "replicas", "threads_per_server", "connections_per_server", "total_threads",
		"total_connections", "minimum_threads_per_server", "minimum_connections_per_server"}, rows)
}

// WriteSizeCSV is size's tiers, a row each.
func WriteSizeCSV(w io.Writer, d algorithms.Deployment, sz algorithms.Sizing, tiers []algorithms.TierRecommendation) error {
	var rows [][]string
	for i, ts := range sz.Tiers {
		rows = append(rows, []string{d.Topology, ts.Name, ts.Position, num(ts.Jobs), optRatio(ts.ReqRatio), optRatio(ts.RTTRatio),
			strconv.Itoa(tiers[i].TotalThreads), strconv.Itoa(tiers[i].ThreadsPerServer), optInt(tiers[i].ConnectionsPerServer)})
	}
	return writeCSV(w, []string{"topology", "tier", "position", "jobs", "reqratio", "rttratio", "total_threads", "threads_per_server",
		"connections_per_server"}, rows)
}

// WriteValidateCSV is validate's grid, an allocation a row.
func WriteValidateCSV(w io.Writer, doc ValidateJSON) error {
	var rows [][]string
	for _, v := range doc.Grid {
		role := strings.Join(v.Roles, "+")
		if v.Allocation == doc.Best.Allocation {
			role += "+best"
		}
		rows = append(rows, []string{doc.Topology, v.Allocation, role, num(doc.SLA), num(v.MaxGoodput), strconv.Itoa(v.AtUsers), num(v.Ratio),
			strconv.FormatInt(v.Errors, 10), num(v.ErrorShare)})
	}
	return writeCSV(w, []string{"topology", "allocation", "role", "sla_seconds", "max_goodput", "at_users", "vs_best", "errors", "error_share"}, rows)
}

// WriteCheckCSV is check's checks, a row each, with the capacity measured.
func WriteCheckCSV(w io.Writer, doc CheckJSON) error {
	c := doc.Capacity
	var rows [][]string
	for _, ch := range doc.Checks {
		res := "pass"
		if !ch.OK {
			res = "fail"
		}
		rows = append(rows, []string{c.Topology, c.Allocation, c.Runner, ch.Name, res, ch.Message, num(c.MaxGoodput), num(c.MaxThroughput), c.Critical,
			num(c.SLA), strconv.Itoa(c.SaturationWorkload), strconv.FormatInt(c.Errors, 10), num(c.ErrorShare)})
	}
	// With no threshold the capacity measured is still the answer: one row,
	// check and result empty.
	if len(rows) == 0 {
		rows = append(rows, []string{c.Topology, c.Allocation, c.Runner, "", "", "", num(c.MaxGoodput), num(c.MaxThroughput), c.Critical,
			num(c.SLA), strconv.Itoa(c.SaturationWorkload), strconv.FormatInt(c.Errors, 10), num(c.ErrorShare)})
	}
	return writeCSV(w, []string{"topology", "allocation", "runner", "check", "result", "detail", "max_goodput", "max_throughput", "critical",
		"sla_seconds", "saturation_workload", "errors", "error_share"}, rows)
}

// WriteDegradationCSV is degradation's schemes: a row per setup, level and class.
func WriteDegradationCSV(w io.Writer, d DegradationJSON) error {
	var rows [][]string
	for _, sc := range d.Schemes {
		for _, p := range sc.Points {
			for _, c := range p.Classes {
				rows = append(rows, []string{sc.Setup, strconv.Itoa(p.Level), c.Name, strconv.Itoa(c.Users), num(c.Throughput), num(c.Solo),
					num(c.Drop), num(c.ResponseTime), num(p.CPU)})
			}
		}
	}
	return writeCSV(w, []string{"setup", d.Swept + "_users", "class", "users", "throughput", "solo", "drop", "response_time", "cpu"}, rows)
}

// WriteClassRecommendCSV is recommend --workload's classes, a row each.
func WriteClassRecommendCSV(w io.Writer, r ClassRecommendJSON) error {
	var rows [][]string
	for _, c := range r.Classes {
		rows = append(rows, []string{r.Workload, c.Name, c.Objective, strconv.Itoa(c.Users), strconv.Itoa(c.MinJobs), strconv.Itoa(c.Pool),
			num(c.Shared.Throughput), num(c.Shared.Adequacy), strconv.FormatBool(c.Shared.Met),
			num(c.Recommended.Throughput), num(c.Recommended.Adequacy), strconv.FormatBool(c.Recommended.Met)})
	}
	return writeCSV(w, []string{"workload", "class", "objective", "users", "min_jobs", "pool", "shared_throughput", "shared_adequacy",
		"shared_met", "recommended_throughput", "recommended_adequacy", "recommended_met"}, rows)
}

// WriteClassTrialCSV is degradation --trial's classes, a row each.
func WriteClassTrialCSV(w io.Writer, r ClassTrialJSON) error {
	var rows [][]string
	for _, c := range r.Classes {
		rows = append(rows, []string{r.Name, c.Name, num(c.Throughput), num(c.Goodput), num(c.ErrorsPerSecond), num(c.Adequacy),
			num(c.Limit), num(c.ResponseTime), num(c.P50), num(c.P90), num(c.P99), num(c.ServerTime)})
	}
	return writeCSV(w, []string{"workload", "class", "throughput", "goodput", "errors_per_second", "adequacy", "limit",
		"response_time", "p50", "p90", "p99", "server_time"}, rows)
}
