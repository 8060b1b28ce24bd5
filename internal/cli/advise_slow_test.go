//go:build !race

package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowAdviseAgreesWithRecommend is issue 22's check on the simulator:
// from observations at 10-60% of the saturation workload alone, advise names
// recommend's critical resource, and its allocation reaches at least 0.97 of
// recommend's goodput at 2 s and at 0.5 s, as validate measures them.
func TestSlowAdviseAgreesWithRecommend(t *testing.T) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4", "1/6/2/6"} {
		t.Run(strings.ReplaceAll(topo, "/", "-"), func(t *testing.T) {
			dir := t.TempDir()
			journal := filepath.Join(dir, "journal.jsonl")
			common := []string{"-t", topo, "--runtime", "2m", "--journal", journal, "--progress", "none"}

			var rec struct {
				Critical struct {
					Tier, Resource     string
					SaturationWorkload int
				}
				Allocation string
			}
			out, stderr, code := run(t, "", append([]string{"recommend", "-o", "json"}, common...)...)
			require.Equal(t, 0, code, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &rec))

			var users []string
			for pct := 10; pct <= 60; pct += 10 {
				users = append(users, strconv.Itoa(rec.Critical.SaturationWorkload*pct/100))
			}
			out, stderr, code = run(t, "", append([]string{"simulate", "--users", strings.Join(users, ","), "-o", "observation"}, common...)...)
			require.Equal(t, 0, code, stderr)
			obs := filepath.Join(dir, "observations.jsonl")
			require.NoError(t, os.WriteFile(obs, []byte(out), 0o644))

			var adv struct {
				Critical   struct{ Tier, Resource string }
				Allocation string
				Advice     struct{ Model string }
			}
			out, stderr, code = run(t, "", "advise", "-t", topo, "--observations", obs, "-o", "json")
			require.Equal(t, 0, code, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &adv))
			assert.Equal(t, rec.Critical.Tier+" "+rec.Critical.Resource, adv.Critical.Tier+" "+adv.Critical.Resource, "critical resource")
			assert.Equal(t, "open", adv.Advice.Model, "bare observations carry no users")

			// validate measures advise's allocation beside recommend's (the
			// grid is recommend's app pools alone) from 80% to 140% of the
			// saturation workload.
			pools := strings.Split(rec.Allocation, "-")
			require.Len(t, pools, 3, rec.Allocation)
			sat := rec.Critical.SaturationWorkload
			span := fmt.Sprintf("%d:%d:%d", sat*8/10, sat*14/10, max(1, sat*6/10/6))
			for _, sla := range []string{"2", "0.5"} {
				var val struct {
					Recommended struct{ MaxGoodput float64 }
					Grid        []struct {
						Allocation string
						MaxGoodput float64
					}
				}
				out, stderr, code = run(t, "", append([]string{"validate", "--recommended", adv.Allocation, "--grid-threads", pools[1],
					"--grid-connections", pools[2], "--users", span, "--sla", sla, "-o", "json"}, common...)...)
				require.Equal(t, 0, code, stderr)
				require.NoError(t, json.Unmarshal([]byte(out), &val))
				recGoodput := 0.0
				for _, g := range val.Grid {
					if g.Allocation == rec.Allocation {
						recGoodput = g.MaxGoodput
					}
				}
				require.Positive(t, recGoodput, "recommend's %s is in the grid", rec.Allocation)
				ratio := val.Recommended.MaxGoodput / recGoodput
				t.Logf("%s SLA %s s: advise %s %.1f pages/s, recommend %s %.1f: %.4f", topo, sla, adv.Allocation,
					val.Recommended.MaxGoodput, rec.Allocation, recGoodput, ratio)
				assert.GreaterOrEqual(t, ratio, 0.97, "SLA %s s", sla)
			}
		})
	}
}
