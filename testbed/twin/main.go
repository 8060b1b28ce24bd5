// Command twin turns measured trials of a live deployment (one, or several
// pooled) into a simulator model: the first step toward a calibrated digital twin.
//
// Per-tier CPU demands come from the utilisation law, D = U / X: each
// tier's utilisation (of its CPU cap) over the throughput that tier served
// (web: HTTP requests, app: pages, db: queries). The simulator reads the
// workload file too: mix.yaml is the trial's workload with the queries per
// page it measured, so the simulator walks the same page mix with the same
// think time as the load generator.
//
//	softalloc simulate --runner live -f testbed/deployment.yaml --users 40 --output observation > low.jsonl
//	go run ./testbed/twin -observation low.jsonl -workload testbed/workload.yaml -out /tmp/twin
//	softalloc find-critical --model /tmp/twin/model.yaml --topology 1/1/1 --step 10 --alloc 100-20-10
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/sim"
	"github.com/softalloc/softalloc/internal/workload"
)

func main() {
	obsPath := flag.String("observation", "", "live trials' observations (JSON lines, as `softalloc simulate --output observation` writes); several are pooled")
	wlPath := flag.String("workload", "testbed/workload.yaml", "the workload file the trial ran")
	out := flag.String("out", "twin", "directory to write model.yaml and mix.yaml into")
	delay := flag.Duration("query-delay", 5*time.Millisecond, "the app's emulated network delay per query (testbed.sh's QUERY_DELAY)")
	flag.Parse()
	if err := run(*obsPath, *wlPath, *out, *delay, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "twin: %v\n", err)
		os.Exit(1)
	}
}

// Demands are the per-tier CPU demands the utilisation law gives.
type Demands struct {
	WebRequest float64 // seconds per HTTP request at the web tier
	AppPage    float64 // seconds per servlet page at the app tier
	DBQuery    float64 // seconds per query at the db tier
	// QueriesPerPage is the db throughput over the app throughput.
	QueriesPerPage float64
}

// Calibrate reads the demands from one observation or pools several: each
// tier's CPU-seconds over the work it served, summed over the windows
// (weighted by their lengths), so that several short trials of a campaign
// read as one longer one.
func Calibrate(obs ...algorithms.Observation) (Demands, error) {
	var d Demands
	if len(obs) == 0 {
		return d, errors.New("no observation to calibrate from")
	}
	// busy and served are each tier's CPU-seconds and completions.
	busy, served := map[string]float64{}, map[string]float64{}
	for i, o := range obs {
		secs := o.RuntimeSeconds
		if secs <= 0 {
			return d, fmt.Errorf("observation %d: runtimeSeconds %.3g: want above 0", i+1, secs)
		}
		for _, tier := range []string{"web", "app", "db"} {
			var found bool
			for _, s := range o.Servers {
				if s.Tier != tier {
					continue
				}
				if s.Throughput <= 0 || s.CPU <= 0 {
					return d, fmt.Errorf("observation %d: tier %s: throughput %.3g and cpu %.3g: want both above 0 (a trial with load)", i+1, tier, s.Throughput, s.CPU)
				}
				found = true
				busy[tier] += s.CPU * secs
				served[tier] += s.Throughput * secs
			}
			if !found {
				return d, fmt.Errorf("observation %d has no server of tier %s", i+1, tier)
			}
		}
	}
	d.WebRequest = busy["web"] / served["web"]
	d.AppPage = busy["app"] / served["app"]
	d.DBQuery = busy["db"] / served["db"]
	d.QueriesPerPage = served["db"] / served["app"]
	return d, nil
}

func run(obsPath, wlPath, out string, delay time.Duration, w io.Writer) error {
	if obsPath == "" {
		return errors.New("want -observation FILE")
	}
	obs, err := readObservations(obsPath)
	if err != nil {
		return err
	}
	d, err := Calibrate(obs...)
	if err != nil {
		return fmt.Errorf("%s: %w", obsPath, err)
	}
	wl, err := workload.Load(wlPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// The simulator reads the same workload format: the trial's workload,
	// with the queries per page the trial measured.
	wl.QueriesPerServletPage = d.QueriesPerPage
	m := sim.Model{
		Name: "twin of " + wl.Name, WarmUp: 3, MixFile: "mix.yaml", Cores: 1, LoadBalancing: sim.BalanceRoundRobin,
		// Waiting requests queue: the testbed's accept queues are deep
		// enough that nothing is dropped below saturation.
		Admission: sim.Admission{Mode: sim.AdmissionUnbounded, RetryAfter: 1, RetryFactor: 2},
		Web: sim.WebModel{PageDemand: duration.Seconds(d.WebRequest), StaticDemand: duration.Seconds(d.WebRequest),
			ImageDemand: duration.Seconds(d.WebRequest), Backlog: 511},
		App:     sim.AppModel{ServletDemand: duration.Seconds(d.AppPage), QueryDelay: duration.Seconds(delay.Seconds()), Backlog: 100, AcceptOrder: sim.OrderFIFO},
		Cluster: sim.ClusterModel{QueryDemand: duration.Seconds(d.DBQuery)}, // unused on a 3-tier topology, but must be valid
		DB:      sim.DBModel{QueryDemand: duration.Seconds(d.DBQuery)},
	}
	if err := writeYAML(filepath.Join(out, "mix.yaml"), "# The workload of the live trial, for the simulator (written by testbed/twin).\n", wl); err != nil {
		return err
	}
	header := fmt.Sprintf("# A twin of the testbed, calibrated by testbed/twin from %s:\n"+
		"# CPU demands by the utilisation law D = U / X, in units of each tier's CPU cap.\n", obsPath)
	modelPath := filepath.Join(out, "model.yaml")
	if err := writeYAML(modelPath, header, m); err != nil {
		return err
	}
	if _, err := sim.LoadModel(modelPath); err != nil {
		return fmt.Errorf("the written model does not load: %w", err)
	}
	fmt.Fprintf(w, "demands: web %.3f ms/request, app %.3f ms/page, db %.3f ms/query; %.2f queries/page\nwrote %s\n",
		d.WebRequest*1e3, d.AppPage*1e3, d.DBQuery*1e3, d.QueriesPerPage, modelPath)
	return nil
}

func writeYAML(path, header string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(header), b...), 0o644)
}

func readObservations(path string) ([]algorithms.Observation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var obs []algorithms.Observation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var o algorithms.Observation
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := o.Validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		obs = append(obs, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(obs) == 0 {
		return nil, fmt.Errorf("%s: no observation", path)
	}
	return obs, nil
}
