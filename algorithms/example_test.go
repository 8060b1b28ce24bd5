package algorithms_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/softalloc/softalloc/algorithms"
)

// Table I of the paper, 1/4/1/4: each tier's throughput and response time at
// the minimum saturating workload, with C-JDBC (the cluster tier) critical.
func ExampleCalculateMinAllocation() {
	d := algorithms.Deployment{Topology: "1/4/1/4", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 4},
		{Name: "cluster", Role: algorithms.RoleCluster, Replicas: 1},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 4},
	}}
	measured := []algorithms.TierMeasurement{
		{Tier: "web", Throughput: 847, ResponseTime: 0.147},
		{Tier: "app", Throughput: 847, ResponseTime: 0.0378},
		{Tier: "cluster", Throughput: 2728, ResponseTime: 0.0082},
	}
	sz, err := algorithms.CalculateMinAllocation(d, "cluster", 0, measured)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range sz.Tiers {
		fmt.Printf("%-8s %-8s jobs %5.1f  total %3d  per server %3d\n", t.Name, t.Position, t.Jobs, t.TotalThreads, t.ThreadsPerServer)
	}
	// Output:
	// web      front    jobs 124.5  total 125  per server 125
	// app      front    jobs  32.0  total  32  per server   8
	// cluster  critical jobs  22.4  total  22  per server  22
	// db       behind   jobs  22.4  total  22  per server   6
}

// The jobs inside a server are its throughput times its response time.
func ExampleLittlesLaw() {
	fmt.Printf("%.1f jobs\n", algorithms.LittlesLaw(740, 0.0351))
	// Output: 26.0 jobs
}

// Exact mean value analysis of a closed network: where a single CPU with
// 2.7 ms per page saturates for users who think 7 s between pages.
func ExampleMVASaturation() {
	users, maxThroughput := algorithms.MVASaturation([]algorithms.Station{{Name: "app-1", Demand: 0.0027, Servers: 1}}, 7)
	fmt.Printf("N* = %.0f users, at most %.0f pages/s\n", users, maxThroughput)
	// Output: N* = 2594 users, at most 370 pages/s
}

// A knee in SLO satisfaction against workload: flat, then falling.
func ExampleInterventionAnalysis() {
	workloads := []float64{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000}
	slo := []float64{0.999, 0.998, 0.999, 0.998, 0.999, 0.95, 0.80, 0.60}
	r, err := algorithms.InterventionAnalysis(workloads, slo, algorithms.DefaultInterventionOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Knee, workloads[r.Index])
	// Output: true 6000
}

// oneCPU is an Experimenter standing for a deployment: users who think 7 s
// between pages, and one app server whose CPU serves 800 pages/s at most.
// A real one drives a deployment or a simulator.
type oneCPU struct{}

func (oneCPU) RunExperiment(ctx context.Context, e algorithms.Experiment) (algorithms.Observation, error) {
	n := float64(e.Workload.Users)
	x := math.Min(n/7.0125, 800)
	r := n/x - 7
	secs := e.Timing.Runtime.Seconds()
	o := algorithms.Observation{RuntimeSeconds: secs, Throughput: x,
		ResponseTimes: algorithms.Histogram{Sum: r * x * secs, Buckets: []algorithms.Bucket{{LE: 2 * r, Count: int64(x * secs)}}}}
	for _, t := range e.Deployment.Tiers {
		cpu := x / 8000
		if t.Name == "app" {
			cpu = x / 800
		}
		o.Servers = append(o.Servers, algorithms.ServerObservation{Name: t.ServerName(0), Tier: t.Name, CPU: cpu,
			Throughput: x, ResponseTime: r / 2})
	}
	return o, ctx.Err()
}

// The whole of Algorithm 1 on an Experimenter: the app CPU saturates first.
func ExampleRecommend() {
	d := algorithms.Deployment{Topology: "1/1/1", Tiers: []algorithms.Tier{
		{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads}},
		{Name: "app", Role: algorithms.RoleApp, Replicas: 1, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
		{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
	}}
	start := algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}
	opts := algorithms.DefaultOptions()
	opts.Timing = algorithms.Timing{Runtime: time.Minute}
	rec, err := algorithms.Recommend(context.Background(), oneCPU{}, d, start, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("critical %s %s at %d users, minJobs %.1f\n", rec.Critical.Tier, rec.Critical.Resource,
		rec.Critical.SaturationWorkload, rec.MinJobs.MinJobs)
	fmt.Printf("app threads %d, connections %d\n", rec.Allocation["app"].Threads, rec.Allocation["app"].Connections)
	// Output:
	// critical app cpu at 5500 users, minJobs 4.8
	// app threads 5, connections 5
}
