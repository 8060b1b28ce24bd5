package sim

import (
	"fmt"
	"sync"

	"github.com/softalloc/softalloc/algorithms"
)

// Trials keeps the adaptive trials that ended precise, so that the same
// experiment asked again at a finer precision (a campaign's refinement of
// a probe within the noise, a screened grid's re-measure) goes on from
// where the coarser trial ended instead of simulating its start again.
// The trial it gives is the one a fresh trial at the finer precision would
// give, to the last digit (refine). A trial's state grows with its users,
// so Trials holds at most a budget of users in all, dropping the trials
// kept longest ago first. One Trials serves one Runner (one model, one
// seed); it is safe for concurrent use.
type Trials struct {
	mu     sync.Mutex
	budget int // users
	used   int
	kept   []keptTrial // oldest first
}

type keptTrial struct {
	key       string
	precision float64
	c         *chain
}

// DefaultTrialsBudget is the users Trials hold by default: about 70
// trials of the paper's 7,000 users, at about 190 bytes a user (1/4/1/4
// near saturation, a trial of a minute) some 100 MB.
const DefaultTrialsBudget = 500_000

// NewTrials holds trials of at most budget users in all.
func NewTrials(budget int) *Trials { return &Trials{budget: budget} }

// trialKey is what identifies a trial but its precision.
func trialKey(e algorithms.Experiment) string {
	t := e.Timing
	t.Precision = 0
	return fmt.Sprintf("%v|%s|%v|%v", e.Deployment, e.Allocation.Key(), e.Workload, t)
}

// take removes and returns a kept trial of key at a coarser precision than
// p, if there is one.
func (t *Trials) take(key string, p float64) *chain {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, k := range t.kept {
		if k.key == key && k.precision > p {
			t.kept = append(t.kept[:i], t.kept[i+1:]...)
			t.used -= len(k.c.users)
			return k.c
		}
	}
	return nil
}

// keep holds c, ended precise at precision p, dropping the oldest trials
// over the budget (c itself if it alone is over).
func (t *Trials) keep(key string, p float64, c *chain) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(c.users)
	if n > t.budget {
		return
	}
	for t.used+n > t.budget {
		t.used -= len(t.kept[0].c.users)
		t.kept = t.kept[1:]
	}
	t.kept = append(t.kept, keptTrial{key, p, c})
	t.used += n
}
