//go:build !race

package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// TestSlowRecommendRangeHoldsOnAnotherSeed is issue 22's check of the
// recommended range: recommend --range measures it (seed 1, its trials at
// 0.25% precision); measured again on seed 2 as precisely, the sizes inside
// it come within 1.5% of the best and the sizes just outside it fall below
// the range's 99%.
func TestSlowRecommendRangeHoldsOnAnotherSeed(t *testing.T) {
	for _, topo := range []string{"1/2/1/2", "1/4/1/4"} {
		t.Run(strings.ReplaceAll(topo, "/", "-"), func(t *testing.T) {
			var rec struct {
				Allocation  string
				Experiments int
				Range       struct {
					Tier, Pool string
					Low, High  int
					Users      int
					Points     []struct{ Size int }
				}
			}
			out, stderr, code := run(t, "", "recommend", "-t", topo, "--range", "--no-journal", "--progress", "plain", "-o", "json")
			require.Equal(t, 0, code, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &rec))
			r := rec.Range
			require.Positive(t, r.Low, "%+v", r)
			// The count holds the range's trials: a line per experiment run.
			ran := regexp.MustCompile(`(?m)^softalloc: +[0-9]+ `).FindAllString(stderr, -1)
			assert.Equal(t, len(ran), rec.Experiments, "experiments reported against run")
			assert.Greater(t, rec.Experiments, len(r.Points))
			pools := strings.Split(rec.Allocation, "-")
			require.Len(t, pools, 3)
			alloc := func(size int) string {
				if r.Pool == "threads" {
					return fmt.Sprintf("%s-%d-%d", pools[0], size, size)
				}
				threads, err := strconv.Atoi(pools[1])
				require.NoError(t, err)
				return fmt.Sprintf("%s-%d-%d", pools[0], max(threads, size), size)
			}
			args := []string{"simulate", "-t", topo, "--seed", "2", "--precision", "0.25%", "--no-journal", "-q", "-o", "json",
				"--users", strconv.Itoa(r.Users), "--sla", "2"}
			for _, p := range r.Points {
				args = append(args, "--alloc", alloc(p.Size))
			}
			out, stderr, code = run(t, "", args...)
			require.Equal(t, 0, code, stderr)
			var rows []struct {
				Goodput map[string]float64
			}
			require.NoError(t, json.Unmarshal([]byte(out), &rows))
			require.Len(t, rows, len(r.Points))
			best := 0.0
			for _, row := range rows {
				best = max(best, row.Goodput["2"])
			}
			for i, p := range r.Points {
				share := rows[i].Goodput["2"] / best
				inside := p.Size >= r.Low && (r.High == 0 || p.Size <= r.High)
				justBelow := i+1 < len(r.Points) && r.Points[i+1].Size == r.Low
				justAbove := r.High > 0 && i > 0 && r.Points[i-1].Size == r.High
				t.Logf("%s %s %s %d: %.3f of the best on seed 2 (range %d-%d)", topo, r.Tier, r.Pool, p.Size, share, r.Low, r.High)
				switch {
				case inside:
					assert.GreaterOrEqual(t, share, 0.985, "size %d inside the range", p.Size)
				case justBelow || justAbove:
					assert.Less(t, share, 0.99, "size %d just outside the range", p.Size)
				}
			}
		})
	}
}
