// Package runfiles reads what testbed/testbed.sh keeps in its run
// directory (the caps it set, the stack up), for the evaluation commands
// that drive a testbed: one place for where that directory is and how its
// files read.
package runfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tiers are the capped tiers, in the order testbed.sh caps takes them.
var Tiers = []string{"web", "app", "db"}

// Dir is the testbed's directory as testbed/core.sh finds it:
// SOFTALLOC_TESTBED_DIR, else softalloc-testbed in the temporary directory.
func Dir() string {
	if d := os.Getenv("SOFTALLOC_TESTBED_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "softalloc-testbed")
}

// Read is the run directory's file name in dir, trimmed.
func Read(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "run", name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Cap is the CPU cap testbed.sh set on tier (run/cap-TIER): cores, or max.
func Cap(dir, tier string) (string, error) {
	c, err := Read(dir, "cap-"+tier)
	if err != nil {
		return "", fmt.Errorf("the testbed's %s cap: %w (is the testbed of SOFTALLOC_TESTBED_DIR up?)", tier, err)
	}
	return c, nil
}
