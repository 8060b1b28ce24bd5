package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/softalloc/softalloc/algorithms"
)

// SimulateRow is one (allocation, workload) of `simulate --output json`.
type SimulateRow struct {
	Allocation string             `json:"allocation"`
	Users      int                `json:"users"`
	Throughput float64            `json:"throughput"`
	Goodput    map[string]float64 `json:"goodput"`
	Badput     map[string]float64 `json:"badput"`
	// ResponseTime is the mean page response time, seconds.
	ResponseTime float64 `json:"responseTime"`
	Drops        int64   `json:"drops"`
	Retries      int64   `json:"retries"`
	// Errors counts the pages that failed (refused, timed out, 5xx), in no
	// throughput; ErrorShare is Errors over the pages attempted.
	Errors     int64            `json:"errors"`
	ErrorShare float64          `json:"errorShare"`
	Servers    []SimulateServer `json:"servers"`
	// RuntimeSeconds is the measured time; the half-widths, where the
	// runner measured them, are of throughput's and each goodput's 95%
	// interval; Window says how the window was chosen.
	RuntimeSeconds      float64                    `json:"runtimeSeconds"`
	ThroughputHalfWidth float64                    `json:"throughputHalfWidth,omitempty"`
	GoodputHalfWidth    map[string]float64         `json:"goodputHalfWidth,omitempty"`
	Window              *algorithms.MeasuredWindow `json:"window,omitempty"`
}

// SimulateServer is one server of a row.
type SimulateServer struct {
	Name         string         `json:"name"`
	Tier         string         `json:"tier"`
	CPU          float64        `json:"cpu"`
	GCShare      float64        `json:"gcShare"`
	Throughput   float64        `json:"throughput"`
	ResponseTime float64        `json:"responseTime"`
	Pools        []SimulatePool `json:"pools"`
	CPUHalfWidth float64        `json:"cpuHalfWidth,omitempty"`
}

// SimulatePool is one pool of a server.
type SimulatePool struct {
	Name          string  `json:"name"`
	Size          int     `json:"size"`
	Busy          float64 `json:"busy"`
	BusyHalfWidth float64 `json:"busyHalfWidth,omitempty"`
}

// SLA is a goodput threshold as the user wrote it, and in seconds.
type SLA struct {
	Text    string
	Seconds float64
}

// NewSimulateRow is one trial's row; allocation is the allocation as written.
func NewSimulateRow(allocation string, e algorithms.Experiment, o algorithms.Observation, slas []SLA) SimulateRow {
	row := SimulateRow{
		Allocation: allocation, Users: e.Workload.Users, Throughput: o.Throughput,
		Goodput: map[string]float64{}, Badput: map[string]float64{}, ResponseTime: o.ResponseTimes.Mean(),
		Drops: o.Drops, Retries: o.Retries, Errors: o.Errors, ErrorShare: ObservationFailures(o).ErrorShare, RuntimeSeconds: o.RuntimeSeconds, ThroughputHalfWidth: o.ThroughputHalfWidth, Window: o.Window,
	}
	for _, t := range slas {
		row.Goodput[t.Text] = o.Goodput(t.Seconds)
		row.Badput[t.Text] = o.Badput(t.Seconds)
		if g := o.GoodputInterval(t.Seconds); g.HalfWidth > 0 {
			if row.GoodputHalfWidth == nil {
				row.GoodputHalfWidth = map[string]float64{}
			}
			row.GoodputHalfWidth[t.Text] = g.HalfWidth
		}
	}
	for _, sv := range o.Servers {
		ss := SimulateServer{Name: sv.Name, Tier: sv.Tier, CPU: sv.CPU, GCShare: sv.GCShare, Throughput: sv.Throughput,
			ResponseTime: sv.ResponseTime, Pools: []SimulatePool{}, CPUHalfWidth: sv.CPUHalfWidth}
		for _, p := range sv.Pools {
			ss.Pools = append(ss.Pools, SimulatePool{Name: p.Name, Size: p.Size, Busy: p.Busy, BusyHalfWidth: p.BusyHalfWidth})
		}
		row.Servers = append(row.Servers, ss)
	}
	return row
}

// tierColumns lists, in chain order, the tiers and each tier's pools.
func tierColumns(d algorithms.Deployment, rows []SimulateRow) (tiers []string, pools []string) {
	seen := map[string]bool{}
	for _, t := range d.Tiers {
		tiers = append(tiers, t.Name)
	}
	for _, r := range rows {
		for _, sv := range r.Servers {
			for _, p := range sv.Pools {
				k := sv.Tier + "." + p.Name
				if !seen[k] {
					seen[k] = true
					pools = append(pools, k)
				}
			}
		}
	}
	order := map[string]int{}
	for i, t := range tiers {
		order[t] = i
	}
	sort.SliceStable(pools, func(i, j int) bool {
		return order[strings.Split(pools[i], ".")[0]] < order[strings.Split(pools[j], ".")[0]]
	})
	return tiers, pools
}

// tierMeans averages CPU per tier and busy units per pool over a tier's servers.
func tierMeans(r SimulateRow) (cpu map[string]float64, busy map[string]float64) {
	cpu, busy = map[string]float64{}, map[string]float64{}
	n, np := map[string]int{}, map[string]int{}
	for _, sv := range r.Servers {
		cpu[sv.Tier] += sv.CPU
		n[sv.Tier]++
		for _, p := range sv.Pools {
			k := sv.Tier + "." + p.Name
			busy[k] += p.Busy
			np[k]++
		}
	}
	for k := range cpu {
		cpu[k] /= float64(n[k])
	}
	for k := range busy {
		busy[k] /= float64(np[k])
	}
	return cpu, busy
}

func simulateHeader(d algorithms.Deployment, rows []SimulateRow, slas []SLA) ([]string, []string, []string) {
	tiers, pools := tierColumns(d, rows)
	h := []string{"allocation", "users", "throughput"}
	for _, t := range slas {
		h = append(h, "goodput@"+t.Text)
	}
	for _, t := range slas {
		h = append(h, "badput@"+t.Text)
	}
	h = append(h, "response_time")
	for _, t := range tiers {
		h = append(h, "cpu."+t)
	}
	for _, p := range pools {
		h = append(h, "busy."+p)
	}
	// Last, so that the columns scripts already read keep their places.
	h = append(h, "errors", "error_share", "drops", "retries")
	return h, tiers, pools
}

func simulateRecord(r SimulateRow, slas []SLA, tiers, pools []string, prec int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	rec := []string{r.Allocation, strconv.Itoa(r.Users), f(r.Throughput)}
	for _, t := range slas {
		rec = append(rec, f(r.Goodput[t.Text]))
	}
	for _, t := range slas {
		rec = append(rec, f(r.Badput[t.Text]))
	}
	rec = append(rec, strconv.FormatFloat(r.ResponseTime, 'f', 3, 64))
	cpu, busy := tierMeans(r)
	for _, t := range tiers {
		rec = append(rec, strconv.FormatFloat(cpu[t], 'f', 3, 64))
	}
	for _, p := range pools {
		rec = append(rec, f(busy[p]))
	}
	rec = append(rec, strconv.FormatInt(r.Errors, 10), strconv.FormatFloat(r.ErrorShare, 'f', 4, 64),
		strconv.FormatInt(r.Drops, 10), strconv.FormatInt(r.Retries, 10))
	return rec
}

// WriteSimulateCSV writes simulate's rows as CSV.
func WriteSimulateCSV(w io.Writer, d algorithms.Deployment, rows []SimulateRow, slas []SLA) error {
	cw := csv.NewWriter(w)
	h, tiers, pools := simulateHeader(d, rows, slas)
	if err := cw.Write(h); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(simulateRecord(r, slas, tiers, pools, 4)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSimulateTable writes simulate's rows as a table.
func WriteSimulateTable(w io.Writer, d algorithms.Deployment, rows []SimulateRow, slas []SLA) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	h, tiers, pools := simulateHeader(d, rows, slas)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(h, "\t"))+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(simulateRecord(r, slas, tiers, pools, 1), "\t")+"\t")
	}
	fmt.Fprintf(tw, "\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "throughput, goodput and badput in pages/s; response time in s; cpu is the mean utilisation of a tier's servers; busy is mean busy units per server; errors are failed pages (error share of the pages attempted), drops connections refused by a full accept queue.")
	return nil
}
