package topology

import (
	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// permitsAndThreads refuses a tier with both: on virtual threads its
// thread pool bounds nothing, and on platform threads it has no limit of
// permits to size.
const permitsAndThreads = "pools: permits bound the jobs of a tier on virtual threads, where threads bound nothing; give permits or threads, not both"

// permitsPool reads pools: {permits: N}: the concurrency limit of a tier on
// virtual threads, which the model keeps as the tier's threads (Tier.Permits)
// beside its connections.
func permitsPool(t *algorithms.Tier, pools *algorithms.TierPools, v *yaml.Node, fail func(string, ...any) error) error {
	switch {
	case t.Permits:
		return fail("pools: permits given twice")
	case t.Children:
		return fail("pools: children are the tier's workers and its connections both; give children alone, not with %s", algorithms.PoolPermits)
	case pools.Threads != 0:
		return fail("%s", permitsAndThreads)
	}
	n, err := readInt(v, MaxPoolSize)
	if err != nil {
		return fail("pools: permits: %v", err)
	}
	t.Permits, pools.Threads = true, n
	return nil
}
