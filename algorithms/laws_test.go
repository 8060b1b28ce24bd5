package algorithms

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The cases come from Table I of the paper (1/2/1/2 saturated at 5,800 users,
// 1/4/1/4 at 6,200) and the calibration of RUBBOS.md.

func TestLittlesLaw(t *testing.T) {
	tests := []struct {
		name         string
		throughput   float64
		responseTime float64
		want         float64
		delta        float64
	}{
		{"1/4/1/4 Apache", 847, 0.147, 124.5, 0.05},
		{"1/4/1/4 Tomcat", 847, 0.0378, 32, 0.05},
		{"1/4/1/4 C-JDBC", 2728, 0.0082, 22.4, 0.05},
		{"1/2/1/2 Apache", 740, 0.137, 101.3, 0.1}, // 101.38: Table I truncates
		{"1/2/1/2 Tomcat", 740, 0.0351, 26, 0.05},
		{"idle", 0, 0.2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, LittlesLaw(tc.throughput, tc.responseTime), tc.delta)
		})
	}
}

func TestForcedFlow(t *testing.T) {
	tests := []struct {
		name       string
		visits     float64
		throughput float64
		want       float64
	}{
		// Reqratio: 2728 queries/s at C-JDBC over 847 pages/s = 3.22 queries per page.
		{"C-JDBC queries", 2728.0 / 847, 847, 2728},
		{"rounded ratio", 3.22, 847, 2727.34},
		{"web requests with logo", 1.96, 740, 1450.4},
		{"no visits", 0, 740, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, ForcedFlow(tc.visits, tc.throughput), 1e-9)
		})
	}
	assert.InDelta(t, 3.22, 2728.0/847, 0.005, "Table I's ratio")
}

func TestUtilizationLawAndServiceDemand(t *testing.T) {
	tests := []struct {
		name        string
		throughput  float64
		demand      float64
		utilization float64
	}{
		{"Tomcat on 1/2/1/2, per server", 370, 0.0027, 0.999},
		{"C-JDBC on 1/4/1/4", 847, 1.0 / 847, 1},
		{"C-JDBC on 1/2/1/2", 740, 0.00118, 0.8732},
		{"Tomcat on 1/4/1/4, per server", 847.0 / 4, 0.0027, 0.5717},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.utilization, UtilizationLaw(tc.throughput, tc.demand), 5e-4)
			assert.InEpsilon(t, tc.demand, ServiceDemand(UtilizationLaw(tc.throughput, tc.demand), tc.throughput), 1e-12,
				"D = U/X inverts U = X D")
		})
	}
	assert.Zero(t, ServiceDemand(0.3, 0), "no throughput, no demand to attribute")
	assert.InDelta(t, 0.00118, ServiceDemand(1, 847), 1e-5, "1/847 s = 1.18 ms")
}

func TestResponseTimeLaw(t *testing.T) {
	tests := []struct {
		name       string
		users      float64
		throughput float64
		think      float64
		want       float64
	}{
		{"1/2/1/2 at saturation", 5800, 740, 7, 0.838},
		{"1/4/1/4 at saturation", 6200, 847, 7, 0.320},
		{"no think time", 10, 100, 0, 0.1},
		{"nobody, nothing", 0, 0, 7, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, ResponseTimeLaw(tc.users, tc.throughput, tc.think), 5e-4)
		})
	}
	assert.True(t, math.IsInf(ResponseTimeLaw(10, 0, 7), 1), "users but no completions: unbounded")
}
