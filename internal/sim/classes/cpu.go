package classes

import (
	"math"

	"github.com/softalloc/softalloc/internal/sim/engine"
)

var inf = math.Inf(1)

// cpu is a server's processor under one scheduling policy. Jobs are request
// ids with an amount of CPU work (seconds at speed 1); the CPU says when the
// next one finishes.
type cpu interface {
	// add starts job id of class k with work seconds of CPU at time now.
	add(now float64, id int32, k int, work float64)
	// next is the time the next job finishes, +Inf if none.
	next() float64
	// pop finishes the job due at now (= next()) and returns it.
	pop(now float64) int32
	// setSpeed changes the speed of every core at now (slumps).
	setSpeed(now, speed float64)
	// busy is core-seconds busy since the last restart, up to now.
	busy(now float64) float64
	restart(now float64)
}

// groupCPU is processor sharing within groups of jobs and a split of the
// cores between groups: one group (ps), a group per priority level
// (priority: levels take cores in order, one per job) or a group per class
// (weighted: cores in proportion to weight, at most one per job). Jobs of
// a group progress at the same rate, so a group keeps a virtual time (work
// done per job) and a heap of finish tags: no per-job updates.
type groupCPU struct {
	policy  string
	cores   float64
	speed   float64
	last    float64
	area    float64
	used    float64 // cores in use
	groupOf []int   // class -> group
	groups  []group // priority: from the highest level down
	nextT   float64
	nextG   int
}

type group struct {
	tags   engine.EventHeap // finish tag (virtual time), job id
	n      int
	v      float64 // virtual time: work done by each job present since the start
	rate   float64 // work per second of each job
	weight float64
	cores  float64
}

func newGroupCPU(w *Workload, speed float64) *groupCPU {
	c := &groupCPU{policy: w.Server.Policy, cores: float64(w.Server.Cores), speed: speed, nextT: inf}
	c.groupOf = make([]int, len(w.Classes))
	switch c.policy {
	case PolicyPS:
		c.groups = make([]group, 1)
	case PolicyWeighted:
		c.groups = make([]group, len(w.Classes))
		for k := range w.Classes {
			c.groupOf[k] = k
			c.groups[k].weight = w.Classes[k].Weight
		}
	case PolicyPriority:
		// One group per distinct level, highest first.
		levels := []int{}
		for _, k := range w.Classes {
			found := false
			for _, l := range levels {
				found = found || l == k.Priority
			}
			if !found {
				levels = append(levels, k.Priority)
			}
		}
		for i := 1; i < len(levels); i++ {
			for j := i; j > 0 && levels[j] > levels[j-1]; j-- {
				levels[j], levels[j-1] = levels[j-1], levels[j]
			}
		}
		c.groups = make([]group, len(levels))
		for k, cl := range w.Classes {
			for g, l := range levels {
				if l == cl.Priority {
					c.groupOf[k] = g
				}
			}
		}
	}
	return c
}

func (c *groupCPU) advance(now float64) {
	dt := now - c.last
	if dt <= 0 {
		return
	}
	c.last = now
	c.area += c.used * dt
	for i := range c.groups {
		g := &c.groups[i]
		if g.n > 0 {
			g.v += g.rate * dt
		}
	}
}

func (c *groupCPU) add(now float64, id int32, k int, work float64) {
	c.advance(now)
	g := &c.groups[c.groupOf[k]]
	g.tags.Push(g.v+work, id, 0)
	g.n++
	c.reschedule()
}

func (c *groupCPU) next() float64 { return c.nextT }

func (c *groupCPU) pop(now float64) int32 {
	c.advance(now)
	g := &c.groups[c.nextG]
	_, id, _ := g.tags.Pop()
	g.n--
	if g.n == 0 {
		g.v = 0 // no drift across busy periods
	}
	c.reschedule()
	return id
}

func (c *groupCPU) setSpeed(now, speed float64) {
	c.advance(now)
	c.speed = speed
	c.reschedule()
}

func (c *groupCPU) busy(now float64) float64 {
	c.advance(now)
	return c.area
}

func (c *groupCPU) restart(now float64) {
	c.advance(now)
	c.area = 0
}

// reschedule splits the cores between groups and finds the next finish.
func (c *groupCPU) reschedule() {
	switch c.policy {
	case PolicyPS:
		g := &c.groups[0]
		g.cores = min(float64(g.n), c.cores)
	case PolicyPriority:
		left := c.cores
		for i := range c.groups {
			g := &c.groups[i]
			g.cores = min(float64(g.n), left)
			left -= g.cores
		}
	case PolicyWeighted:
		c.waterFill()
	}
	c.used = 0
	c.nextT, c.nextG = inf, -1
	for i := range c.groups {
		g := &c.groups[i]
		if g.n == 0 {
			g.rate = 0
			continue
		}
		c.used += g.cores
		g.rate = c.speed * g.cores / float64(g.n)
		if g.rate <= 0 {
			continue
		}
		t := c.last + max(0, g.tags.Top()-g.v)/g.rate
		if t < c.nextT {
			c.nextT, c.nextG = t, i
		}
	}
}

// waterFill gives each backlogged group cores in proportion to its weight,
// capped at one core per job; what a capped group leaves goes to the rest.
func (c *groupCPU) waterFill() {
	left := c.cores
	open := 0
	for i := range c.groups {
		g := &c.groups[i]
		g.cores = -1 // not settled
		if g.n == 0 {
			g.cores = 0
			continue
		}
		open++
	}
	for open > 0 {
		var wsum float64
		for i := range c.groups {
			if c.groups[i].cores < 0 {
				wsum += c.groups[i].weight
			}
		}
		capped := false
		for i := range c.groups {
			g := &c.groups[i]
			if g.cores < 0 && float64(g.n) <= left*g.weight/wsum {
				g.cores = float64(g.n)
				left -= g.cores
				open--
				capped = true
			}
		}
		if !capped {
			for i := range c.groups {
				g := &c.groups[i]
				if g.cores < 0 {
					g.cores = left * g.weight / wsum
				}
			}
			return
		}
	}
}

// rrCPU is round robin from one FIFO run queue over the cores: a job runs
// until it finishes or its quantum ends, then goes to the back of the queue
// (the time slices seed 000 blames for the collapse of the light service).
type rrCPU struct {
	quantum float64
	speed   float64
	work    *[]float64 // work left per job id, owned by the model
	run     []slot
	queue   engine.IDQueue
	nextT   float64
	nextC   int
	last    float64
	area    float64
}

type slot struct {
	id    int32 // -1: idle
	since float64
	qEnd  float64 // end of the quantum
	end   float64 // end of the slice: quantum end or finish
	// finishes says the job finishes at end, inside its quantum.
	finishes bool
}

func newRRCPU(cores int, quantum, speed float64, work *[]float64) *rrCPU {
	c := &rrCPU{quantum: quantum, speed: speed, work: work, run: make([]slot, cores), nextT: inf}
	for i := range c.run {
		c.run[i].id = -1
	}
	return c
}

func (c *rrCPU) account(now float64) {
	if dt := now - c.last; dt > 0 {
		n := 0
		for i := range c.run {
			if c.run[i].id >= 0 {
				n++
			}
		}
		c.area += float64(n) * dt
		c.last = now
	}
}

func (c *rrCPU) add(now float64, id int32, _ int, work float64) {
	c.account(now)
	(*c.work)[id] = work
	for i := range c.run {
		if c.run[i].id < 0 {
			c.start(now, i, id)
			c.findNext()
			return
		}
	}
	c.queue.Push(id)
}

// start gives core i to job id for one quantum.
func (c *rrCPU) start(now float64, i int, id int32) {
	s := &c.run[i]
	s.id, s.since, s.qEnd = id, now, now+c.quantum
	s.reslice(now, (*c.work)[id], c.speed)
}

// reslice sets the end of the slice from the work left at now.
func (s *slot) reslice(now, work, speed float64) {
	fin := now + work/speed
	s.finishes = fin <= s.qEnd
	s.end = min(fin, s.qEnd)
}

func (c *rrCPU) findNext() {
	c.nextT, c.nextC = inf, -1
	for i := range c.run {
		if c.run[i].id >= 0 && c.run[i].end < c.nextT {
			c.nextT, c.nextC = c.run[i].end, i
		}
	}
}

func (c *rrCPU) next() float64 { return c.nextT }

// pop ends the slice due now: a finished job is returned; a job whose
// quantum ran out goes to the back of the queue (-1 is returned) and the
// core takes the head.
func (c *rrCPU) pop(now float64) int32 {
	c.account(now)
	i := c.nextC
	s := &c.run[i]
	id := s.id
	done := s.finishes
	if done {
		(*c.work)[id] = 0
	} else {
		(*c.work)[id] -= c.speed * (now - s.since)
		c.queue.Push(id)
	}
	if c.queue.Len() > 0 {
		c.start(now, i, c.queue.Pop())
	} else {
		s.id = -1
	}
	c.findNext()
	if done {
		return id
	}
	return -1
}

func (c *rrCPU) setSpeed(now, speed float64) {
	c.account(now)
	for i := range c.run {
		s := &c.run[i]
		if s.id < 0 {
			continue
		}
		(*c.work)[s.id] -= c.speed * (now - s.since)
		s.since = now
		s.reslice(now, (*c.work)[s.id], speed)
	}
	c.speed = speed
	c.findNext()
}

func (c *rrCPU) busy(now float64) float64 {
	c.account(now)
	return c.area
}

func (c *rrCPU) restart(now float64) {
	c.account(now)
	c.area = 0
}
