package engine

// Scheduler is a CPU that runs jobs of a known amount of work (seconds at
// speed 1) under one scheduling policy: a job is an entity id of a class,
// and the scheduler says when the next one finishes. Unlike Station it
// keeps every job's progress, so demands may have any distribution.
type Scheduler interface {
	// Add starts job id of class k with work seconds of CPU at time now.
	Add(now float64, id int32, k int, work float64)
	// Next is the time the next job finishes (or, in round robin, its
	// slice ends), +Inf if none.
	Next() float64
	// Pop handles what is due at now (= Next()) and returns the job that
	// finished, or -1 (a round-robin slice that ended unfinished).
	Pop(now float64) int32
	// SetSpeed changes the speed of every core at now (slumps, the share a
	// collector leaves).
	SetSpeed(now, speed float64)
	// Busy is the core-seconds busy since the last Restart, up to now.
	Busy(now float64) float64
	// Restart forgets the busy time: the measured window begins at now.
	Restart(now float64)
}

// groupPolicy is how a GroupSharing splits the cores between its groups.
type groupPolicy uint8

const (
	groupsShared   groupPolicy = iota // one group: plain processor sharing
	groupsPriority                    // levels take cores in order, one per job
	groupsWeighted                    // cores in proportion to weight, at most one per job
)

// GroupSharing is processor sharing within groups of jobs and a split of the
// cores between groups: one group (NewProcessorSharing), a group per
// priority level (NewPriority) or a group per class (NewWeighted). Jobs of
// a group progress at the same rate, so a group keeps a virtual time (work
// done per job) and a heap of finish tags: no per-job updates.
type GroupSharing struct {
	policy  groupPolicy
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
	tags   EventHeap // finish tag (virtual time), job id
	n      int
	v      float64 // virtual time: work done by each job present since the start
	rate   float64 // work per second of each job
	weight float64
	cores  float64
}

// NewProcessorSharing is egalitarian processor sharing of cores cores at
// speed among the jobs of every class: n jobs each progress at
// speed * min(1, cores/n).
func NewProcessorSharing(cores int, speed float64, classes int) *GroupSharing {
	c := &GroupSharing{policy: groupsShared, cores: float64(cores), speed: speed, nextT: inf}
	c.groupOf = make([]int, classes)
	c.groups = make([]group, 1)
	return c
}

// NewWeighted is weighted share of cores cores at speed: the classes with
// jobs split the cores in proportion to weight[k] (at most one core per
// job, the excess shared on), processor sharing within a class.
func NewWeighted(cores int, speed float64, weight []float64) *GroupSharing {
	c := &GroupSharing{policy: groupsWeighted, cores: float64(cores), speed: speed, nextT: inf}
	c.groupOf = make([]int, len(weight))
	c.groups = make([]group, len(weight))
	for k := range weight {
		c.groupOf[k] = k
		c.groups[k].weight = weight[k]
	}
	return c
}

// NewPriority is strict preemptive priority on cores cores at speed: the
// classes of the highest priority[k] take the cores first, one per job,
// the next level what is left; processor sharing within a level.
func NewPriority(cores int, speed float64, priority []int) *GroupSharing {
	c := &GroupSharing{policy: groupsPriority, cores: float64(cores), speed: speed, nextT: inf}
	c.groupOf = make([]int, len(priority))
	// One group per distinct level, highest first.
	levels := []int{}
	for _, p := range priority {
		found := false
		for _, l := range levels {
			found = found || l == p
		}
		if !found {
			levels = append(levels, p)
		}
	}
	for i := 1; i < len(levels); i++ {
		for j := i; j > 0 && levels[j] > levels[j-1]; j-- {
			levels[j], levels[j-1] = levels[j-1], levels[j]
		}
	}
	c.groups = make([]group, len(levels))
	for k, p := range priority {
		for g, l := range levels {
			if l == p {
				c.groupOf[k] = g
			}
		}
	}
	return c
}

func (c *GroupSharing) advance(now float64) {
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

// Add starts job id of class k with work seconds of CPU at time now.
func (c *GroupSharing) Add(now float64, id int32, k int, work float64) {
	c.advance(now)
	g := &c.groups[c.groupOf[k]]
	g.tags.Push(g.v+work, id, 0)
	g.n++
	c.reschedule()
}

// Next is the time the next job finishes, +Inf if none.
func (c *GroupSharing) Next() float64 { return c.nextT }

// Pop finishes the job due at now (= Next()) and returns it.
func (c *GroupSharing) Pop(now float64) int32 {
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

// SetSpeed changes the speed of every core at now.
func (c *GroupSharing) SetSpeed(now, speed float64) {
	c.advance(now)
	c.speed = speed
	c.reschedule()
}

// Busy is the core-seconds busy since the last Restart, up to now.
func (c *GroupSharing) Busy(now float64) float64 {
	c.advance(now)
	return c.area
}

// Restart forgets the busy time: the measured window begins at now.
func (c *GroupSharing) Restart(now float64) {
	c.advance(now)
	c.area = 0
}

// reschedule splits the cores between groups and finds the next finish.
func (c *GroupSharing) reschedule() {
	switch c.policy {
	case groupsShared:
		g := &c.groups[0]
		g.cores = min(float64(g.n), c.cores)
	case groupsPriority:
		left := c.cores
		for i := range c.groups {
			g := &c.groups[i]
			g.cores = min(float64(g.n), left)
			left -= g.cores
		}
	case groupsWeighted:
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
func (c *GroupSharing) waterFill() {
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

// RoundRobin is round robin from one FIFO run queue over the cores: a job
// runs until it finishes or its quantum ends, then goes to the back of the
// queue (the time slices that collapse a light service beside a heavy one).
type RoundRobin struct {
	quantum float64
	speed   float64
	work    []float64 // work left per job id
	run     []slot
	queue   IDQueue
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

// NewRoundRobin is round robin on cores cores at speed with the given
// quantum, seconds.
func NewRoundRobin(cores int, quantum, speed float64) *RoundRobin {
	c := &RoundRobin{quantum: quantum, speed: speed, run: make([]slot, cores), nextT: inf}
	for i := range c.run {
		c.run[i].id = -1
	}
	return c
}

func (c *RoundRobin) account(now float64) {
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

// Add starts job id with work seconds of CPU at time now; the class does
// not matter.
func (c *RoundRobin) Add(now float64, id int32, _ int, work float64) {
	c.account(now)
	if int(id) >= len(c.work) {
		c.work = append(c.work, make([]float64, int(id)+1-len(c.work))...)
	}
	c.work[id] = work
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
func (c *RoundRobin) start(now float64, i int, id int32) {
	s := &c.run[i]
	s.id, s.since, s.qEnd = id, now, now+c.quantum
	s.reslice(now, c.work[id], c.speed)
}

// reslice sets the end of the slice from the work left at now.
func (s *slot) reslice(now, work, speed float64) {
	fin := now + work/speed
	s.finishes = fin <= s.qEnd
	s.end = min(fin, s.qEnd)
}

func (c *RoundRobin) findNext() {
	c.nextT, c.nextC = inf, -1
	for i := range c.run {
		if c.run[i].id >= 0 && c.run[i].end < c.nextT {
			c.nextT, c.nextC = c.run[i].end, i
		}
	}
}

// Next is the time the next slice ends, +Inf if no job runs.
func (c *RoundRobin) Next() float64 { return c.nextT }

// Pop ends the slice due now: a finished job is returned; a job whose
// quantum ran out goes to the back of the queue (-1 is returned) and the
// core takes the head.
func (c *RoundRobin) Pop(now float64) int32 {
	c.account(now)
	i := c.nextC
	s := &c.run[i]
	id := s.id
	done := s.finishes
	if done {
		c.work[id] = 0
	} else {
		c.work[id] -= c.speed * (now - s.since)
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

// SetSpeed changes the speed of every core at now.
func (c *RoundRobin) SetSpeed(now, speed float64) {
	c.account(now)
	for i := range c.run {
		s := &c.run[i]
		if s.id < 0 {
			continue
		}
		c.work[s.id] -= c.speed * (now - s.since)
		s.since = now
		s.reslice(now, c.work[s.id], speed)
	}
	c.speed = speed
	c.findNext()
}

// Busy is the core-seconds busy since the last Restart, up to now.
func (c *RoundRobin) Busy(now float64) float64 {
	c.account(now)
	return c.area
}

// Restart forgets the busy time: the measured window begins at now.
func (c *RoundRobin) Restart(now float64) {
	c.account(now)
	c.area = 0
}

var (
	_ Scheduler = (*GroupSharing)(nil)
	_ Scheduler = (*RoundRobin)(nil)
)
