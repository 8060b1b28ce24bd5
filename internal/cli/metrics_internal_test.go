package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/metrics"
)

// A metrics file that cannot be written is named as the user gave it, not
// as the temporary file of the atomic write.
func TestMetricsFileErrorNamesTheRequestedPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "x.prom")
	f := metricsFlags{file: path}
	err := f.emit(context.Background(), metrics.New("simulate", "1/2/1/2", "sim"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--metrics-file "+strconv.Quote(path)+": ")
	assert.NotRegexp(t, regexp.QuoteMeta(path)+`\d`, err.Error())
}
