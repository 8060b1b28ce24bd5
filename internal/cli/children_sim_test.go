package cli_test

import "testing"

// The simulator refused testdata/deployments/php.yaml with "php.connections
// ... got 0": it says, in one line, that it has no children and where a PHP
// stack runs.
func TestTheSimulatorRefusesAPHPStackSayingWhy(t *testing.T) {
	const why = `deployment "php": tier "php"'s pool is php-fpm children, each holding its own connections to the next tier; ` +
		`the simulator models the RUBBoS chain (web threads, app threads and app connections) and has no children: ` +
		`run a PHP stack with --runner live (a runner section in the deployment file) or --runner exec`
	runUsageCases(t, []usageCase{
		{"recommend", []string{"recommend", "-f", phpDeployment}, why},
		{"find-critical", []string{"find-critical", "-f", phpDeployment}, why},
		{"simulate", []string{"simulate", "-f", phpDeployment, "--users", "10"}, why},
	})
}
