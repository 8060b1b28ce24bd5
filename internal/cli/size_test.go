package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/cli"
)

// `softalloc size` refuses a measurements file that would give a misleading
// or non-finite answer, on one line naming the value (TestSizeErrors has the
// file's form).
func TestSizeRefusesBadMeasurements(t *testing.T) {
	const head = "topology: 1/2/1/2\ncritical: app\n"
	for _, tc := range []struct{ name, body, want string }{
		{"duplicate tier", head + "tiers:\n  - {name: web, throughput: 740, responseTime: 0.137}\n  - {name: app, throughput: 740, responseTime: 0.0351}\n  - {name: web, throughput: 1, responseTime: 1}\n",
			`tiers[0] and tiers[2] are both named "web": want one measurement per tier`},
		{"negative minJobs", head + "minJobs: -5\n", "minJobs: want > 0, got -5"},
		{"zero minJobs", head + "minJobs: 0\n", "minJobs: want > 0, got 0"},
		{"huge throughput", head + "tiers:\n  - {name: web, throughput: 740, responseTime: 0.137}\n  - {name: app, throughput: 1e300, responseTime: 0.0351}\n",
			`critical tier "app": throughput x responseTime = 3.51e+298 jobs: want a pool size of at most 2147483647`},
		{"infinite throughput", head + "tiers:\n  - {name: web, throughput: .inf, responseTime: 0.137}\n",
			`tier "web": throughput: want a finite number > 0, got +Inf`},
	} {
		for _, format := range []string{"table", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "m.yaml")
				require.NoError(t, os.WriteFile(p, []byte(tc.body), 0o600))
				var out, errb bytes.Buffer
				code := cli.Run(context.Background(), []string{"size", "-m", p, "-o", format}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
				assert.Equal(t, cli.ExitUsage, code)
				assert.Empty(t, out.String())
				assert.Contains(t, errb.String(), tc.want)
				assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
			})
		}
	}
}
