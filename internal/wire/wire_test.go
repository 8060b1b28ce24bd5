package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

func sample() (algorithms.Experiment, algorithms.Observation) {
	e := algorithms.Experiment{
		Deployment: algorithms.Deployment{Topology: "1/2/1", Tiers: []algorithms.Tier{
			{Name: "web", Role: algorithms.RoleWeb, Replicas: 1, Cores: 2, Pools: []string{algorithms.PoolThreads}},
			{Name: "app", Role: algorithms.RoleApp, Replicas: 2, Cores: 1, Pools: []string{algorithms.PoolThreads, algorithms.PoolConnections}},
			{Name: "db", Role: algorithms.RoleDB, Replicas: 1, Cores: 1},
		}},
		Allocation: algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}},
		Workload:   algorithms.Workload{Users: 6000},
		Timing:     algorithms.Timing{RampUp: 8 * time.Minute, Runtime: 12 * time.Minute, RampDown: 1500 * time.Millisecond},
	}
	o := algorithms.Observation{RuntimeSeconds: 720, Throughput: 850.5, Drops: 3, Retries: 4, Errors: 5,
		// 850.5 pages/s for 720 s: 612,360 pages.
		ResponseTimes: algorithms.Histogram{Sum: 120000, Buckets: []algorithms.Bucket{{LE: 0.1, Count: 400000}, {LE: 2, Count: 212360}}},
		Servers: []algorithms.ServerObservation{
			{Name: "web-1", Tier: "web", CPU: 0.3, Throughput: 2600, ResponseTime: 0.14,
				Pools: []algorithms.PoolObservation{{Name: "threads", Size: 400, Busy: 120.5, FullShare: -1}}},
			{Name: "app-1", Tier: "app", CPU: 0.97, Resources: map[string]float64{"disk": 0.2}, Throughput: 425, ResponseTime: 0.03,
				GCShare: 0.04, Throttled: 0.5, Pools: []algorithms.PoolObservation{{Name: "threads", Size: 150, Busy: 13, FullShare: 0}}},
		}}
	return e, o
}

// The published format is what the algorithm's types wrote when the
// journal, the replay campaign and the exec protocol were first published:
// the wire types keep those bytes whatever becomes of the algorithm's.
func TestFormatIsTheOneFirstPublished(t *testing.T) {
	e, o := sample()
	b, err := json.Marshal(wire.FromRecord(e, o))
	require.NoError(t, err)
	assert.JSONEq(t, `{"experiment":{"deployment":{"topology":"1/2/1","tiers":[
		{"name":"web","role":"web","replicas":1,"cores":2,"pools":["threads"]},
		{"name":"app","role":"app","replicas":2,"cores":1,"pools":["threads","connections"]},
		{"name":"db","role":"db","replicas":1,"cores":1}]},
	  "allocation":{"app":{"threads":150,"connections":60},"web":{"threads":400}},
	  "workload":{"users":6000},
	  "timing":{"rampUpSeconds":480,"runtimeSeconds":720,"rampDownSeconds":1.5}},
	 "observation":{"runtimeSeconds":720,"throughput":850.5,
	  "responseTimes":{"buckets":[{"le":0.1,"count":400000},{"le":2,"count":212360}],"sum":120000},
	  "servers":[
	   {"name":"web-1","tier":"web","cpu":0.3,"pools":[{"name":"threads","size":400,"busy":120.5,"fullShare":-1}],"throughput":2600,"responseTime":0.14},
	   {"name":"app-1","tier":"app","cpu":0.97,"resources":{"disk":0.2},"pools":[{"name":"threads","size":150,"busy":13,"fullShare":0}],
	    "throughput":425,"responseTime":0.03,"gcShare":0.04,"throttled":0.5}],
	  "drops":3,"retries":4,"errors":5}}`, string(b))

	var r wire.Record
	require.NoError(t, json.Unmarshal(b, &r))
	e2, o2, err := r.Algorithms()
	require.NoError(t, err)
	assert.Equal(t, e, e2)
	assert.Equal(t, o, o2)
}

func TestReadingValidates(t *testing.T) {
	e, o := sample()
	o.Servers[1].CPU = 7.5
	_, _, err := wire.FromRecord(e, o).Algorithms()
	assert.EqualError(t, err, "observation.servers[1].cpu: want a number in [0,1], got 7.5")

	e, o = sample()
	e.Workload.Users = 0
	_, _, err = wire.FromRecord(e, o).Algorithms()
	assert.EqualError(t, err, `experiment: want a topology and users >= 1, got "1/2/1" and 0`)

	var tm wire.Timing
	err = json.Unmarshal([]byte(`{"rampUpSeconds":0,"runtimeSeconds":1e300,"rampDownSeconds":0}`), &tm)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runtimeSeconds > 0")
}

// An adaptive trial's record carries its precision, SLA thresholds and
// intervals, and reads back the same; a fixed trial's timing is written
// without thresholds, as before trials were adaptive.
func TestAdaptiveRecordRoundTrips(t *testing.T) {
	e, o := sample()
	e.Timing.Precision, e.Timing.SLAs = 0.02, []float64{0.5, 2}
	o.ThroughputHalfWidth = 8.5
	o.GoodputIntervals = []algorithms.GoodputInterval{{SLA: 0.5, Goodput: 800, HalfWidth: 9}, {SLA: 2, Goodput: 850, HalfWidth: 8.5}}
	o.Servers[1].CPUHalfWidth = 0.004
	o.Servers[1].Pools[0].BusyHalfWidth = 1.5
	o.Window = &algorithms.MeasuredWindow{WarmUpSeconds: 25, TransientSeconds: 20, IntervalSeconds: 1, Batches: 24, Precision: 0.02,
		Precise: true, Limit: "app-1 threads busy", Excess: 0.9}
	b, err := json.Marshal(wire.FromRecord(e, o))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"timing":{"rampUpSeconds":480,"runtimeSeconds":720,"rampDownSeconds":1.5,"precision":0.02,"slas":[0.5,2]}`)
	assert.Contains(t, string(b), `"window":{"warmUpSeconds":25,"transientSeconds":20,"intervalSeconds":1,"batches":24,"precision":0.02,"precise":true,"limit":"app-1 threads busy","excess":0.9}`)
	var r wire.Record
	require.NoError(t, json.Unmarshal(b, &r))
	e2, o2, err := r.Algorithms()
	require.NoError(t, err)
	assert.Equal(t, e, e2)
	assert.Equal(t, o, o2)

	e.Timing.Precision = 0
	assert.Equal(t, wire.Timing{RampUpSeconds: 480, RuntimeSeconds: 720, RampDownSeconds: 1.5}, wire.FromTiming(e.Timing))

	var tm wire.Timing
	err = json.Unmarshal([]byte(`{"rampUpSeconds":0,"runtimeSeconds":60,"rampDownSeconds":0,"precision":1.5}`), &tm)
	require.ErrorContains(t, err, "precision 1.5: want a relative half-width in [0,1)")
}

// A tier's software and children are written, and read back, where set
// (the published format above is unchanged without them).
func TestSoftwareAndChildrenRoundTrip(t *testing.T) {
	e, o := sample()
	e.Deployment.Tiers[1].Software, e.Deployment.Tiers[1].Children = algorithms.SoftwarePHPFPM, true
	e.Deployment.Tiers[0].Software = algorithms.SoftwareApache
	b, err := json.Marshal(wire.FromRecord(e, o))
	require.NoError(t, err)
	assert.Contains(t, string(b), `{"name":"app","role":"app","replicas":2,"cores":1,"pools":["threads","connections"],"software":"php-fpm","children":true}`)
	var r wire.Record
	require.NoError(t, json.Unmarshal(b, &r))
	e2, _, err := r.Algorithms()
	require.NoError(t, err)
	assert.Equal(t, e, e2)
}
