package cli_test

import (
	"testing"
)

// Issue 35: validate --seeds 1,1 averaged one run twice and narrowed the
// interval by the square root of two. Every list flag in which a repeat
// means nothing refuses one, naming the flag and the repeated value, before
// any experiment.
func TestListFlagsRefuseRepeats(t *testing.T) {
	// Each command line also holds a mistake its command finds later, still
	// before any experiment: were a repeat taken, the case fails on that
	// mistake's message instead of running a campaign.
	validate := []string{"validate", "--topology", "1/2/1/2", "--recommended", "400-15-15", "--output", "later"}
	sim := []string{"simulate", "--topology", "1/2/1/2", "--runtime", "0s"}
	deg := []string{"degradation", "--classes", "light,heavy", "--pools", "later"}
	evaluate := []string{"evaluate", "--runtime", "-3s"}
	runUsageCases(t, []usageCase{
		{"validate seeds", append(validate, "--users", "5000", "--seeds", "1,1"), `--seeds "1,1": seed 1 is given twice; want each seed once`},
		{"validate seeds written apart", append(validate, "--users", "5000", "--seeds", "2, 1,01"), `--seeds "2, 1,01": seed 01 is seed 1 again; want each seed once`},
		{"validate users", append(validate, "--users", "5000,6000,5000"), `--users "5000,6000,5000": workload 5000 is given twice; want each workload once`},
		{"validate grid threads", append(validate, "--users", "5000", "--grid-threads", "6,10,6"), `--grid-threads "6,10,6": pool size 6 is given twice; want each pool size once`},
		{"validate grid connections", append(validate, "--users", "5000", "--grid-connections", "010,10"), `--grid-connections "010,10": pool size 10 is pool size 010 again; want each pool size once`},
		{"simulate users", append(sim, "--users", "100,100"), `--users "100,100": workload 100 is given twice; want each workload once`},
		{"simulate sla", append(sim, "--users", "100", "--sla", "2,0.5,2s"), `--sla "2,0.5,2s": SLA 2s is SLA 2 again; want each SLA once`},
		{"simulate alloc", append(sim, "--users", "100", "--alloc", "400-8-8", "--alloc", "400-6-6", "--alloc", "400-008-8"),
			`--alloc: allocation 400-008-8 is allocation 400-8-8 again; want each allocation once`},
		{"nojournal evaluate seeds", append(evaluate, "--seeds", "3,3"), `--seeds "3,3": seed 3 is given twice; want each seed once`},
		{"nojournal evaluate topologies", append(evaluate, "--topologies", "1/2/1/2,1/4/1/4, 1/2/1/2"),
			`--topologies "1/2/1/2,1/4/1/4, 1/2/1/2": topology 1/2/1/2 is given twice; want each topology once`},
		{"nojournal degradation heavy", append(deg, "--heavy", "0,5,5"), `--heavy "0,5,5": workload 5 is given twice; want each workload once`},
		{"nojournal degradation policy", append(deg, "--pools", "shared", "--policy", "ps,rr,ps,later", "--quantum", "10ms"), `--policy "ps,rr,ps,later": policy ps is given twice; want each policy once`},
		{"nojournal degradation quantum", append(deg, "--pools", "shared", "--policy", "rr,later", "--quantum", "10ms,0.01s"), `--quantum "10ms,0.01s": time slice 0.01s is time slice 10ms again; want each time slice once`},
		{"nojournal degradation priority", append(deg, "--pools", "shared", "--policy", "priority,later", "--priority", "light,heavy,light"), `--priority "light,heavy,light": class light is given twice; want each class once`},
		{"nojournal degradation weight", append(deg, "--pools", "shared", "--policy", "weighted,later", "--weight", "light=0.8,heavy=0.2,light=0.1"), `--weight "light=0.8,heavy=0.2,light=0.1": class light is given twice; want each class once`},
		{"nojournal degradation hold", append(deg, "--hold", "light=1,light=2"), `--hold "light=1,light=2": class light is given twice; want each class once`},
	})
}
