package report

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/softalloc/softalloc/algorithms"
)

func TestErrorShareIsOfThePagesAttempted(t *testing.T) {
	served := algorithms.Observation{RuntimeSeconds: 10, Throughput: 30, Errors: 100,
		ResponseTimes: algorithms.Histogram{Buckets: []algorithms.Bucket{{LE: 1, Count: 300}}, Sum: 30}}
	assert.InDelta(t, 100.0/400, ObservationFailures(served).ErrorShare, 1e-12)
	// A window without response times (Prometheus's) served throughput x runtime.
	window := algorithms.Observation{RuntimeSeconds: 10, Throughput: 30, Errors: 100}
	assert.InDelta(t, 100.0/400, ObservationFailures(window).ErrorShare, 1e-12)
	// Nothing served: every page attempted failed.
	assert.InDelta(t, 1, ObservationFailures(algorithms.Observation{RuntimeSeconds: 10, Errors: 5}).ErrorShare, 1e-12)
	assert.Zero(t, ObservationFailures(algorithms.Observation{RuntimeSeconds: 10}).ErrorShare)
	both := ObservationFailures(served, window, algorithms.Observation{Drops: 3, Retries: 4})
	assert.Equal(t, Failures{Errors: 200, ErrorShare: 200.0 / 800, Drops: 3, Retries: 4}, both)
	// The advise document has no trials and no failures to state.
	assert.Nil(t, NewRecommendJSON(algorithms.Deployment{}, algorithms.Recommendation{}, "").Failures)
}
