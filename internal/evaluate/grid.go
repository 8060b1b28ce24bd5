package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/jsonl"
	"github.com/softalloc/softalloc/internal/topology"
)

// GridsFile holds the curves of every grid an evaluation measured, beside
// its evaluation.json: one line per allocation, so that a fixed-length
// evaluation's grids can be the ground truth another evaluation's answers
// are judged against (Config.ReferenceGrids).
const GridsFile = "evaluation-grids.jsonl"

// GridCurves is one allocation's goodput over a grid's workloads as its
// trials measured it, per SLA threshold and workload (pages/s), with each
// point's 95% half-width.
type GridCurves struct {
	Topology   string      `json:"topology"`
	Seed       uint64      `json:"seed"`
	Allocation string      `json:"allocation"`
	Workloads  []int       `json:"workloads"`
	SLAs       []float64   `json:"slas"`
	Goodput    [][]float64 `json:"goodput"`
	HalfWidth  [][]float64 `json:"halfWidth"`
}

// curvesOf are a comparison's allocations as GridCurves, to seven significant
// digits (a thousandth of a page per second is far below any interval),
// each allocation once.
func curvesOf(topo string, seed uint64, cmp algorithms.Comparison) []GridCurves {
	round := func(x float64) float64 {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 7, 64), 64)
		return v
	}
	rounded := func(m [][]float64) [][]float64 {
		out := make([][]float64, len(m))
		for s := range m {
			out[s] = make([]float64, len(m[s]))
			for k, v := range m[s] {
				out[s][k] = round(v)
			}
		}
		return out
	}
	out := make([]GridCurves, 0, len(cmp.Entries))
	seen := map[string]bool{}
	for _, e := range cmp.Entries {
		if seen[e.Allocation.Key()] {
			continue // an allocation in two roles was measured once
		}
		seen[e.Allocation.Key()] = true
		out = append(out, GridCurves{Topology: topo, Seed: seed, Allocation: format(e.Allocation), Workloads: cmp.Options.Workloads,
			SLAs: cmp.Options.SLAs, Goodput: rounded(e.Goodput), HalfWidth: rounded(e.HalfWidth)})
	}
	return out
}

// writeGrids writes every result's grid to dir's GridsFile (none: no file,
// and an older one is removed, so that it cannot pass for this run's).
func writeGrids(dir string, rep Report) error {
	path := filepath.Join(dir, GridsFile)
	var buf bytes.Buffer
	for _, r := range rep.Results {
		for _, g := range r.Grid {
			line, err := json.Marshal(g)
			if err != nil {
				return fmt.Errorf("evaluation grids: %w", err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	if buf.Len() == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("evaluation grids: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("evaluation grids: %w", err)
	}
	return nil
}

// ReadGrids reads a GridsFile: the grids by topology and seed. A line that
// is not one allocation's curves is an error that names it.
func ReadGrids(path string) (map[GridKey][]GridCurves, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines, tail, err := jsonl.Read(f, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(bytes.TrimSpace(tail)) > 0 {
		lines = append(lines, tail)
	}
	out := map[GridKey][]GridCurves{}
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var g GridCurves
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		if err := g.check(); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		k := GridKey{g.Topology, g.Seed}
		if prev := out[k]; len(prev) > 0 && (!slices.Equal(prev[0].Workloads, g.Workloads) || !slices.Equal(prev[0].SLAs, g.SLAs)) {
			return nil, fmt.Errorf("%s line %d: %s seed %d: workloads %v and SLAs %v, where the grid's earlier lines have %v and %v",
				path, i+1, g.Topology, g.Seed, g.Workloads, g.SLAs, prev[0].Workloads, prev[0].SLAs)
		}
		out[k] = append(out[k], g)
	}
	return out, nil
}

// GridKey names a grid: the topology and the seed it was measured on.
type GridKey struct {
	Topology string
	Seed     uint64
}

func (g GridCurves) check() error {
	if _, err := topology.ParseTopology(g.Topology); err != nil {
		return err
	}
	if _, err := topology.ParseAllocation(g.Allocation); err != nil {
		return err
	}
	if len(g.Workloads) == 0 || len(g.SLAs) == 0 {
		return fmt.Errorf("%s: want workloads and slas, got %d and %d", g.Allocation, len(g.Workloads), len(g.SLAs))
	}
	for _, m := range [][][]float64{g.Goodput, g.HalfWidth} {
		if len(m) != len(g.SLAs) {
			return fmt.Errorf("%s: want a curve per SLA (%d), got %d", g.Allocation, len(g.SLAs), len(m))
		}
		for _, c := range m {
			if len(c) != len(g.Workloads) {
				return fmt.Errorf("%s: want a point per workload (%d), got %d", g.Allocation, len(g.Workloads), len(c))
			}
			for _, v := range c {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					return fmt.Errorf("%s: want goodput and half-widths >= 0, got %v", g.Allocation, v)
				}
			}
		}
	}
	return nil
}

// referenceGrid is a fixed-length evaluation's grid of one topology and
// seed, with the trial timing it was measured with.
type referenceGrid struct {
	curves []GridCurves
	timing algorithms.Timing
}

// referenceGrid is the reference's grid of topo and seed, if it has one
// measured at this run's SLA thresholds.
func (cfg Config) referenceGrid(topo string, seed uint64) *referenceGrid {
	if cfg.Reference == nil {
		return nil
	}
	g := cfg.ReferenceGrids[GridKey{topo, seed}]
	if len(g) == 0 || !slices.Equal(g[0].SLAs, cfg.SLAs) {
		return nil
	}
	c := cfg.Reference.Config
	return &referenceGrid{curves: g, timing: algorithms.Timing{RampUp: seconds(c.WarmUpSeconds), Runtime: seconds(c.RuntimeSeconds),
		SLAs: cfg.SLAs}}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// comparison is the reference's grid as a comparison, every entry a plain
// grid allocation: this run's roles are its own.
func (g *referenceGrid) comparison() (algorithms.Comparison, error) {
	w, slas := g.curves[0].Workloads, g.curves[0].SLAs
	cmp := algorithms.Comparison{Options: algorithms.CompareOptions{Workloads: w, SLAs: slas, Timing: g.timing}}
	for _, c := range g.curves {
		a, err := topology.ParseAllocation(c.Allocation)
		if err != nil {
			return cmp, err
		}
		e := algorithms.NewCompared(algorithms.GridEntry{Allocation: a, Role: algorithms.RoleGrid}, len(slas), len(w))
		for s := range slas {
			copy(e.Goodput[s], c.Goodput[s])
			copy(e.HalfWidth[s], c.HalfWidth[s])
		}
		cmp.Entries = append(cmp.Entries, e)
	}
	return cmp, nil
}

// checkReproduced runs the reference grid's first allocation at its first
// workload again and wants the goodput the reference recorded: the
// simulator is deterministic, so any difference means the reference was
// measured by another simulator (or model) than this run's, and its grid
// is no ground truth for this run's answers.
func (g *referenceGrid) checkReproduced(ctx context.Context, x algorithms.Experimenter, d algorithms.Deployment) error {
	c := g.curves[0]
	a, err := topology.ParseAllocation(c.Allocation)
	if err != nil {
		return err
	}
	o, err := x.RunExperiment(ctx, algorithms.Experiment{Deployment: d, Allocation: a, Workload: algorithms.Workload{Users: c.Workloads[0]},
		Timing: g.timing})
	if err != nil {
		return err
	}
	for s, sla := range c.SLAs {
		got, want := o.GoodputInterval(sla).Mean, c.Goodput[s][0]
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			return fmt.Errorf("the reference is stale: %s at %d users gave %.7g pages/s within %g s here, %.7g in the reference's grid "+
				"(regenerate it: make evaluate-fixed)", c.Allocation, c.Workloads[0], got, sla, want)
		}
	}
	return nil
}

// distinctAllocations counts a comparison's allocations, each once.
func distinctAllocations(cmp algorithms.Comparison) int {
	seen := map[string]bool{}
	for _, e := range cmp.Entries {
		seen[e.Allocation.Key()] = true
	}
	return len(seen)
}
