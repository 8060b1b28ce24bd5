package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 35: a Prometheus (or a proxy before it) answering 6 GB was read
// whole, and the runner ran out of memory. An answer past maxPromBody is an
// error naming the bound and the URL, and no retry asks for it again.
func TestPrometheusAnswerIsBounded(t *testing.T) {
	defer func(n int64) { maxPromBody = n }(maxPromBody)
	maxPromBody = 1 << 16
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		pad := strings.Repeat(" ", 1<<12)
		for i := 0; i < 1<<10; i++ { // 4 MiB, unless the reader stops
			if _, err := fmt.Fprint(w, pad); err != nil {
				return
			}
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer srv.Close()
	p, err := newProm(srv.URL, http.DefaultTransport)
	require.NoError(t, err)
	_, err = p.value(context.Background(), "up", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query up: ")
	assert.Contains(t, err.Error(), srv.URL+"/api/v1/query answered more than 65536 bytes (the bound on one answer of Prometheus)")
	assert.True(t, errors.As(err, new(errQuery)), "not retried: the same query gets the same answer")
}
