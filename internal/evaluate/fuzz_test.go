package evaluate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
)

// A reference's grids file is input: whatever it holds, ReadGrids either
// refuses it with one line or gives grids whose every allocation has a
// curve per SLA, a point per workload, no NaN or negative value (check),
// and the workloads and SLAs of the grid's first allocation.
func FuzzReadGrids(f *testing.F) {
	line := `{"topology":"1/2/1/2","seed":1,"allocation":"400-15-15","workloads":[5000,5500],"slas":[0.5,2],` +
		`"goodput":[[600,610],[700,705]],"halfWidth":[[3,4],[2,2]]}`
	f.Add([]byte(line + "\n"))
	f.Add([]byte(line + "\n" + line + "\n"))
	f.Add([]byte(`{"topology":"1/2/1/2","seed":1,"allocation":"400-15-15","workloads":[5000],"slas":[0.5],"goodput":[[1]],"halfWidth":[[-1]]}`))
	f.Add([]byte(`{"topology":"1/2/1/2","seed":2,"allocation":"400-15","workloads":[1],"slas":[1],"goodput":[[1]],"halfWidth":[[1]]}` + "\n\n"))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), GridsFile)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		grids, err := ReadGrids(path)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		for k, g := range grids {
			for _, c := range g {
				require.Equal(t, k, GridKey{c.Topology, c.Seed})
				require.NoError(t, c.check())
				require.Equal(t, g[0].Workloads, c.Workloads, "one grid, one set of workloads")
				require.Equal(t, g[0].SLAs, c.SLAs, "one grid, one set of SLAs")
			}
		}
	})
}
