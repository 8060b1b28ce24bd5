package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Trials hold at most their budget of users, the oldest dropped first,
// and a trial over the budget alone is not kept.
func TestTrialsKeepTheirBudget(t *testing.T) {
	small := func(users int) *chain { return &chain{users: make([]user, users)} }
	tr := NewTrials(10)
	tr.keep("a", 0.08, small(4))
	tr.keep("b", 0.08, small(4))
	tr.keep("c", 0.08, small(4)) // a goes
	assert.Nil(t, tr.take("a", 0.04))
	assert.NotNil(t, tr.take("b", 0.04))
	assert.Nil(t, tr.take("c", 0.08), "not at the same precision: only a finer one goes on")
	assert.NotNil(t, tr.take("c", 0.02))
	tr.keep("d", 0.08, small(11))
	assert.Nil(t, tr.take("d", 0.04))
	assert.Zero(t, tr.used)
}
