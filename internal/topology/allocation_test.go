package topology

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

func TestParseAllocation(t *testing.T) {
	tests := []struct {
		in, format string
		want       algorithms.Allocation
	}{
		{"400-150-60", "400-150-60", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}}},
		{"\t400-6-6 ", "400-6-6", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 6, Connections: 6}}},
		{"1-1-100000", "1-1-100000", algorithms.Allocation{"web": {Threads: 1}, "app": {Threads: 1, Connections: 100000}}},
		{"0400-015-6", "400-15-6", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 15, Connections: 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAllocation(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			s, err := FormatAllocation(got)
			require.NoError(t, err)
			assert.Equal(t, tt.format, s)
		})
	}
}

func TestParseAllocationErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"400-x-60", `allocation "400-x-60": app thread pool "x" is not a positive integer`},
		{"x-150-60", `allocation "x-150-60": web thread pool "x" is not a positive integer`},
		{"400-150-0", `allocation "400-150-0": app connection pool "0" is not a positive integer`},
		{"400-150", `allocation "400-150": want #W_T-#A_T-#A_C (e.g. 400-150-60), got 2 numbers`},
		{"400-150-60-60", `allocation "400-150-60-60": want #W_T-#A_T-#A_C (e.g. 400-150-60), got 4 numbers`},
		// Issue 35: a minus sign is a separator too, and "-1-5-5" said "got 4 numbers".
		{"400--150-60", `allocation "400--150-60": app thread pool -150 is not a pool size: want a whole number in 1..100000`},
		{"-1-5-5", `allocation "-1-5-5": web thread pool -1 is not a pool size: want a whole number in 1..100000`},
		{"5-5--0", `allocation "5-5--0": app connection pool -0 is not a pool size: want a whole number in 1..100000`},
		{"-1-5", `allocation "-1-5": web thread pool -1 is not a pool size: want a whole number in 1..100000`},
		{"400-150-60-", `allocation "400-150-60-": want #W_T-#A_T-#A_C (e.g. 400-150-60), got a - with no pool size after it`},
		{"-", `allocation "-": want #W_T-#A_T-#A_C (e.g. 400-150-60), got a - with no pool size after it`},
		{"400-150--", `allocation "400-150--": want #W_T-#A_T-#A_C (e.g. 400-150-60), got a - with no pool size after it`},
		{"400/150/60", `allocation "400/150/60": want #W_T-#A_T-#A_C (e.g. 400-150-60), got 1 number`},
		{"", `allocation "": want #W_T-#A_T-#A_C (e.g. 400-150-60), got an empty string`},
		{"400-100001-60", `allocation "400-100001-60": app thread pool "100001" is more than the maximum of 100000`},
		{"400-1.5-60", `allocation "400-1.5-60": app thread pool "1.5" is not a positive integer`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAllocation(tt.in)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Nil(t, a)
			var te *Error
			require.True(t, errors.As(err, &te))
			assert.Equal(t, "allocation", te.Kind)
		})
	}
}

func TestFormatAllocationErrors(t *testing.T) {
	tests := []struct {
		name string
		in   algorithms.Allocation
		want string
	}{
		{"nil", nil, "web thread pool is 0"},
		{"no connections", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150}}, "app connection pool is 0"},
		{"negative", algorithms.Allocation{"web": {Threads: -1}, "app": {Threads: 150, Connections: 60}}, "web thread pool is -1"},
		{"web connections", algorithms.Allocation{"web": {Threads: 4, Connections: 1}, "app": {Threads: 1, Connections: 1}}, "has web connections"},
		{"other tier", algorithms.Allocation{"web": {Threads: 4}, "app": {Threads: 1, Connections: 1}, "db": {Threads: 1}}, `has tier "db"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FormatAllocation(tt.in)
			require.Error(t, err)
			assert.Empty(t, s)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestValidateAllocation(t *testing.T) {
	d, err := ParseTopology("1/4/1/4")
	require.NoError(t, err)
	a, err := ParseAllocation("400-150-60")
	require.NoError(t, err)
	require.NoError(t, ValidateAllocation(d, a))

	tests := []struct {
		name string
		a    algorithms.Allocation
		want string
	}{
		{"missing tier", algorithms.Allocation{"web": {Threads: 400}},
			`allocation "web:threads=400,connections=0": tier "app": threads: want a positive size, got 0`},
		{"missing pool", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150}},
			`tier "app": connections: want a positive size, got 0`},
		{"negative", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: -1}},
			`tier "app": connections: want a positive size, got -1`},
		{"extra pool", algorithms.Allocation{"web": {Threads: 400, Connections: 3}, "app": {Threads: 150, Connections: 60}},
			`tier "web": connections: set to 3, but the tier has no such pool in deployment "1/4/1/4"`},
		{"pool on a tier without pools", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}, "db": {Threads: 5}},
			`tier "db": threads: set to 5, but the tier has no such pool in deployment "1/4/1/4"`},
		{"unknown tier", algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 60}, "tomcat": {Threads: 5}},
			`names tier "tomcat", which deployment "1/4/1/4" lacks`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateAllocation(d, tt.a)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var te *Error
			assert.True(t, errors.As(err, &te))
		})
	}

	// A tier with no entry at all is fine when it has no pools.
	d3, err := ParseTopology("1/2/1")
	require.NoError(t, err)
	assert.NoError(t, ValidateAllocation(d3, a))

	bad := d
	bad.Tiers = append([]algorithms.Tier(nil), d.Tiers...)
	bad.Tiers[0].Pools = []string{"sockets"}
	assert.EqualError(t, ValidateAllocation(bad, a),
		`allocation "400-150-60": tier "web" of deployment "1/4/1/4" lists unknown pool "sockets"`)
}
